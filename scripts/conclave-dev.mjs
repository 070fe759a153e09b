#!/usr/bin/env node
// `conclave` from the TypeScript sources, through tsx: `npm start`, and every `conclave`
// subprocess started from the sources (src/cli/childProcess.ts: tests, `conclave up`), so the
// development loop never runs a stale dist/. bin/conclave.js runs the compiled CLI.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");

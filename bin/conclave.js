#!/usr/bin/env node
// The `conclave` command: the compiled CLI in dist/ (`npm run build`; `npm install` in a
// checkout builds it). scripts/conclave-dev.mjs runs the TypeScript sources instead.
import { existsSync } from "node:fs";

const main = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  console.error("conclave: dist/ is missing: run `npm run build` first");
  process.exit(1);
}
await import(main.href);

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { messageOf } from "../errors.ts";

/**
 * elkjs's browser bundle (the ELK layout engine, in-thread: no web worker),
 * read from node_modules for the viewer to serve as `elk.js`, so the page
 * lays its diagrams out offline, from the installed package, with no CDN.
 */
export type ElkBundle = { ok: true; script: string } | { ok: false; reason: string };

export function readElkBundle(): ElkBundle {
  try {
    const path = createRequire(import.meta.url).resolve("elkjs/lib/elk.bundled.js");
    return { ok: true, script: readFileSync(path, "utf8") };
  } catch (error) {
    return {
      ok: false,
      reason: `elkjs's browser bundle could not be read (${messageOf(error)}): npm install elkjs (an optional peer) to draw the diagrams`,
    };
  }
}

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { messageOf, singleLine } from "../errors.ts";

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
    const code = (error as { code?: unknown }).code;
    const reason =
      code === "MODULE_NOT_FOUND"
        ? "the optional package elkjs is not installed"
        : `elkjs's browser bundle could not be read (${singleLine(messageOf(error), 200)})`;
    return { ok: false, reason: `${reason}: npm install elkjs to draw them (each machine shows as text cards)` };
  }
}

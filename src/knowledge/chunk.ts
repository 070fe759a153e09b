/**
 * Cutting a document into chunks for retrieval: paragraphs packed up to a size, never across a
 * Markdown section, each chunk with its offset in the document and (Markdown) the headings above it,
 * so a hit can be cited.
 */
import { extname } from "node:path";
import { InvalidRequestError } from "../errors.ts";

/** A piece of a document: its text, where it starts (characters), its section. */
export interface Chunk {
  /** Its place in the document, from 0. */
  n: number;
  /** Where it starts in the document's text, in characters. */
  offset: number;
  /** The Markdown headings above it, outermost first, joined by ` > `; absent outside any section. */
  heading?: string;
  text: string;
}

/** How text is cut. */
export interface ChunkOptions {
  /** A chunk's target size in characters; a longer paragraph is split at sentence or word ends. Default 800. */
  maxChars?: number;
  /** `markdown` also cuts at headings and names the section; default: from the file name, else `text`. */
  format?: DocumentFormat;
}

/** The formats `knowledge add` reads. */
export type DocumentFormat = "text" | "markdown";

/** A file `knowledge add` does not read; the one-line message says why and what to do. */
export class UnsupportedDocumentError extends InvalidRequestError {}

/** The default chunk size, in characters. */
export const DEFAULT_CHUNK_CHARS = 800;

const MARKDOWN = new Set([".md", ".markdown", ".mdx"]);
const TEXT = new Set([".txt", ".text", ".rst", ".adoc", ".csv", ".log", ""]);

/**
 * The format of a file by its name: `markdown` (.md, .markdown, .mdx), `text` (.txt, .rst, .adoc,
 * .csv, .log, none). PDF and any other extension are refused with an {@link UnsupportedDocumentError}.
 */
export function formatOf(path: string): DocumentFormat {
  const ext = extname(path).toLowerCase();
  if (MARKDOWN.has(ext)) return "markdown";
  if (TEXT.has(ext)) return "text";
  if (ext === ".pdf")
    throw new UnsupportedDocumentError(
      `${path}: PDF is not read yet; extract its text first (e.g. pdftotext ${path} out.txt) and add that`,
    );
  throw new UnsupportedDocumentError(`${path}: ${ext} files are not read; give text (.txt) or Markdown (.md)`);
}

/** Refuses binary content (a NUL byte) with a one-line error naming the file. */
export function checkText(path: string, text: string): void {
  if (text.includes("\u0000")) throw new UnsupportedDocumentError(`${path}: not a text file (it holds NUL bytes)`);
}

interface Block {
  offset: number;
  text: string;
  heading: string | undefined;
}

/**
 * The chunks of a document, in order: its paragraphs (blocks between blank lines; in Markdown also
 * cut before each heading, a fenced code block kept whole when it fits) packed together while they
 * fit in `maxChars`, a longer one split at sentence ends, else at spaces. Blank text has no chunk.
 */
export function chunkText(text: string, options: ChunkOptions = {}): Chunk[] {
  const maxChars = options.maxChars ?? DEFAULT_CHUNK_CHARS;
  if (!Number.isInteger(maxChars) || maxChars < 50)
    throw new RangeError(`maxChars must be 50 or more, got ${maxChars}`);
  const blocks = options.format === "markdown" ? markdownBlocks(text) : paragraphs(text, 0, undefined);
  const chunks: Chunk[] = [];
  let current: Block | undefined;
  const flush = () => {
    if (current && current.text.trim() !== "") {
      chunks.push({
        n: chunks.length,
        offset: current.offset,
        ...(current.heading ? { heading: current.heading } : {}),
        text: current.text.trim(),
      });
    }
    current = undefined;
  };
  for (const block of blocks.flatMap((each) => splitLong(each, maxChars))) {
    if (current && current.heading === block.heading && current.text.length + 2 + block.text.length <= maxChars) {
      current.text = `${current.text}\n\n${block.text}`;
      continue;
    }
    flush();
    current = { ...block };
  }
  flush();
  return chunks;
}

/** The paragraphs of `text` (cut at blank lines), their offsets counted from `base`. */
function paragraphs(text: string, base: number, heading: string | undefined): Block[] {
  const blocks: Block[] = [];
  const blank = /\n[ \t]*\n/g;
  let start = 0;
  const push = (end: number) => {
    const raw = text.slice(start, end);
    const lead = raw.length - raw.trimStart().length;
    if (raw.trim() !== "") blocks.push({ offset: base + start + lead, text: raw.trim(), heading });
  };
  for (let match = blank.exec(text); match; match = blank.exec(text)) {
    push(match.index);
    start = match.index + match[0].length;
  }
  push(text.length);
  return blocks;
}

/** Markdown's sections (cut before each ATX heading outside code fences), each cut into paragraphs. */
function markdownBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const path: string[] = [];
  let sectionStart = 0;
  let heading: string | undefined;
  let inFence = false;
  let at = 0;
  const endSection = (end: number) => {
    blocks.push(...paragraphs(text.slice(sectionStart, end), sectionStart, heading));
  };
  for (const line of text.split("\n")) {
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence;
    const match = inFence ? null : /^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (match) {
      endSection(at);
      const level = (match[1] as string).length;
      path.length = Math.min(path.length, level - 1);
      path[level - 1] = (match[2] as string).trim();
      heading = path.filter(Boolean).join(" > ");
      sectionStart = at;
    }
    at += line.length + 1;
  }
  endSection(text.length);
  return blocks;
}

/** A block longer than `maxChars` cut at sentence ends, else at spaces, else anywhere. */
function splitLong(block: Block, maxChars: number): Block[] {
  if (block.text.length <= maxChars) return [block];
  const pieces: Block[] = [];
  let rest = block.text;
  let offset = block.offset;
  while (rest.length > maxChars) {
    const window = rest.slice(0, maxChars);
    const sentence = Math.max(window.lastIndexOf(". "), window.lastIndexOf("\n"), window.lastIndexOf("? "));
    const space = window.lastIndexOf(" ");
    const cut = sentence >= maxChars / 2 ? sentence + 1 : space >= maxChars / 2 ? space : maxChars;
    pieces.push({ offset, text: rest.slice(0, cut).trim(), heading: block.heading });
    const skipped = rest.slice(cut);
    const lead = skipped.length - skipped.trimStart().length;
    offset += cut + lead;
    rest = skipped.trimStart();
  }
  if (rest !== "") pieces.push({ offset, text: rest, heading: block.heading });
  return pieces;
}

import { connect } from "../../client/client.ts";
import type { AddProgress } from "../../client/knowledge.ts";
import { printable } from "../../client/printable.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";

const help = `conclave knowledge: knowledge collections (documents searched by meaning)

Usage:
  conclave knowledge add PATH... --collection C [--chunk-chars N] [--json]
  conclave knowledge list [--collection C] [--json]
  conclave knowledge search "query" --collection C[,C2...] [--limit N] [--json]
  conclave knowledge remove --collection C [DOCUMENT...]

  --collection C    the collection (1-64 of A-Z a-z 0-9 _ -); search takes several, comma-separated
  --limit N         search: at most N hits  [5]
  --chunk-chars N   add: a chunk's target size in characters  [800]
  --json            one JSON object per line

add reads text (.txt, .rst, .adoc, .csv, .log, no extension) and Markdown
(.md, .markdown, .mdx) files, cuts them into chunks (paragraphs, never across a
Markdown section), and has the knowledge workers (conclave worker --services
knowledge) embed and store them; progress goes to stderr. A document added
again under the same path replaces its earlier version. PDF is not read: extract
its text first (pdftotext). Embeddings: CONCLAVE_EMBEDDING_MODEL on the LLM's
server, else the offline embedder (not semantic; see docs/knowledge.md).

search prints the best chunks, each with its citation: collection, document,
chunk number and character offset. remove removes the named documents (their
chunks and vectors with them), or the whole collection when none is named.

A tenant's collections are its own: it can neither list, search nor remove
another tenant's.`;

export default defineCommand({
  help,
  flags: {
    collection: { type: "string", short: "c" },
    limit: { type: "string" },
    "chunk-chars": { type: "string" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const [verb, ...words] = positionals;
    const collection = values.collection;
    const json = values.json === true;
    const out = (line: string) => console.log(printable(line, { newlines: false }));
    if (verb === "add") {
      if (!collection) throw new UsageError("give the collection: conclave knowledge add FILE... --collection C");
      if (words.length === 0)
        throw new UsageError("give the files to add: conclave knowledge add FILE... --collection C");
      const chunkChars = wholeNumber(values["chunk-chars"], "--chunk-chars", 50, 8_000);
      const client = await connect({ nc: await bus() });
      // One line a step: the file's name made printable, the line's end left a line's end.
      const progress = (step: AddProgress) =>
        process.stderr.write(
          `${printable(`[${step.documentsDone + 1}/${step.documentsTotal}] ${step.document}: ${step.chunksDone}/${step.chunksTotal} chunks`, { newlines: false })}\n`,
        );
      const added = await client.knowledge.add(collection, words, {
        onProgress: progress,
        ...(chunkChars === undefined ? {} : { chunkChars }),
      });
      for (const document of added) {
        if (json) console.log(JSON.stringify({ collection, ...document }));
        else out(`added ${document.document} to ${collection}: ${document.chunks} chunks`);
      }
      return 0;
    }
    if (verb === "list") {
      if (words.length > 0) throw new UsageError("list takes no arguments: conclave knowledge list [--collection C]");
      const client = await connect({ nc: await bus() });
      const documents = await client.knowledge.list(collection);
      for (const document of documents) {
        if (json) console.log(JSON.stringify(document));
        else
          out(
            `${document.collection}  ${document.document}  ${document.chunks} chunks, ${document.chars} chars  [${document.embedder}, ${document.added_at}]`,
          );
      }
      if (!json && documents.length === 0)
        console.error(collection ? `no documents in collection ${collection}` : "no knowledge collections yet");
      return 0;
    }
    if (verb === "search") {
      if (!collection) throw new UsageError('give the collection: conclave knowledge search "query" --collection C');
      const query = words.join(" ");
      if (query.trim() === "") throw new UsageError('give the query: conclave knowledge search "query" --collection C');
      const limit = wholeNumber(values.limit, "--limit", 1, 100) ?? 5;
      const client = await connect({ nc: await bus() });
      const hits = await client.knowledge.search(collection.split(","), query, { limit });
      for (const hit of hits) {
        if (json) console.log(JSON.stringify(hit));
        else {
          const where = `${hit.collection}/${hit.document}#${hit.chunk} @${hit.offset}${hit.heading ? ` (${hit.heading})` : ""}`;
          out(`${hit.score.toFixed(3)}  ${where}`);
          out(`       ${hit.text.replace(/\s+/g, " ").slice(0, 300)}`);
        }
      }
      if (!json && hits.length === 0) console.error("no match");
      return 0;
    }
    if (verb === "remove") {
      if (!collection)
        throw new UsageError("give the collection: conclave knowledge remove --collection C [DOCUMENT...]");
      const client = await connect({ nc: await bus() });
      const targets = words.length === 0 ? [undefined] : words;
      let missing = 0;
      for (const document of targets) {
        const removed = await client.knowledge.remove(collection, document);
        if (json) console.log(JSON.stringify({ collection, ...(document ? { document } : {}), ...removed }));
        else if (removed.documents === 0) {
          missing++;
          console.error(
            printable(`no document ${document ?? "at all"} in collection ${collection}`, { newlines: false }),
          );
        } else out(`removed ${removed.documents} document(s), ${removed.chunks} chunks from ${collection}`);
      }
      return missing > 0 ? 1 : 0;
    }
    throw new UsageError(
      `unknown knowledge command '${verb ?? ""}': add, list, search or remove (conclave knowledge add FILE --collection C)`,
    );
  },
});

/** A whole-number flag in [min, max], or undefined when not given. */
function wholeNumber(value: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max)
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  return number;
}

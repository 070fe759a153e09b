import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { messageOf } from "../../errors.ts";
import { openMemoryGraph } from "../../memory/graph/open.ts";
import type { MemoryGraphStore } from "../../memory/graph/store.ts";
import { validateArtifact } from "../../memory/graph/types.ts";
import { sessionArg, UsageError } from "../args.ts";
import { type Bus, defineCommand } from "../command.ts";
import { INSIGHT_VERBS, type InsightVerb, runInsightVerb } from "../memoryInsights.ts";

const help = `conclave memory: search a session's memory, its insights, export or import its graph

Usage:
  conclave memory search --session ID "query" [--limit N] [--tool NAME] [--json]
  conclave memory insights --session ID [--all] [--json]
  conclave memory dismiss --session ID INSIGHT_ID [--json]
  conclave memory review --session ID --edge EDGE_ID (--accept | --reject) [--json]
  conclave memory refresh --session ID [--json]
  conclave memory clear-cache --session ID [--json]
  conclave memory export --session ID [--out FILE]
  conclave memory import FILE

  --session ID   the session
  --limit N      at most N items  [10]
  --tool NAME    only the episodes whose turn invoked the tool NAME (the query
                 may then be left out)
  --json         one item per line
  --out FILE     where the export goes  [standard output]
  --all          insights: the dismissed ones too
  --edge ID      review: the evolves edge (an insight's "review: --edge …")
  --accept       review: keep the fact's new value
  --reject       review: restore its earlier value

search lists the user facts, threads (open or closed) and episodes the memory
learnt, best first for the query: topic overlap, then embedding similarity
(when configured), then recurrence, then recency (through a runner).

insights lists what memory observed of the session (a topic of many turns, a
fact whose value changed, a thread long open), derived from its graph; dismiss
one and it is never raised again; review accepts or rejects a fact's change
(reject restores the earlier value); refresh derives them again only if memory
changed; clear-cache has the memory service drop its in-memory copy of the
session (the next read loads it again). All go through a runner, which records
each on the session's log (docs/memory.md, "Insights").

export writes the session's memory graph (nodes and edges) as one JSON
artifact; import checks an artifact (a dangling edge or a bad node is named,
exit 2, and nothing changes) and replaces the graph of the session it names
with it. Both read the store directly, as the memory service does (the
worker role; CONCLAVE_MEMORY_BACKEND=postgres and CONCLAVE_POSTGRES_URL for
PostgreSQL): import while no turn of that session runs.`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    limit: { type: "string" },
    tool: { type: "string" },
    json: { type: "boolean" },
    out: { type: "string" },
    all: { type: "boolean" },
    edge: { type: "string" },
    accept: { type: "boolean" },
    reject: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const [verb, ...words] = positionals;
    if (verb === "export") return exportGraph(bus, sessionArg(values.session), values.out);
    if (verb === "import") {
      if (words.length !== 1) throw new UsageError("give the artifact's file, e.g. conclave memory import ana.json");
      return importGraph(bus, words[0] as string);
    }
    if ((INSIGHT_VERBS as readonly string[]).includes(verb ?? "")) {
      const session = sessionArg(values.session);
      if (values.accept && values.reject) throw new UsageError("--accept or --reject, not both");
      const decision = values.accept ? "accept" : values.reject ? "reject" : undefined;
      const client = await connect({ nc: await bus() });
      return runInsightVerb(client, verb as InsightVerb, {
        session,
        words,
        json: values.json ?? false,
        all: values.all ?? false,
        edge: values.edge,
        decision,
      });
    }
    if (verb !== "search")
      throw new UsageError(
        `unknown memory command '${verb ?? ""}': search, ${INSIGHT_VERBS.join(", ")}, export or import (conclave memory search --session S "query")`,
      );
    const session = sessionArg(values.session);
    const limit = Number(values.limit ?? 10);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw new UsageError("--limit must be a whole number from 1 to 100");
    const client = await connect({ nc: await bus() });
    if (values.tool !== undefined && values.tool.trim() === "") throw new UsageError("--tool needs a tool's name");
    const items = await client.memory.search(session, words.join(" "), {
      limit,
      ...(values.tool !== undefined ? { tool: values.tool } : {}),
    });
    for (const item of items) {
      const tools = item.tools ? `; tools ${item.tools.join(", ")}` : "";
      if (values.json) console.log(JSON.stringify(item));
      else
        console.log(
          printable(
            `${item.kind.padEnd(7)} ${item.text}  [${item.topics.join(", ")}; seen ${item.recurrence}×${tools}]`,
            { newlines: false },
          ),
        );
    }
    if (!values.json && items.length === 0)
      console.error(
        values.tool !== undefined
          ? `no episode of this session invoked ${values.tool}`
          : "nothing in memory for this session yet",
      );
    return 0;
  },
});

/** Runs `work` on the memory graph store, opened as the memory service opens it (the worker role). */
async function withGraph<T>(bus: Bus, work: (graph: MemoryGraphStore) => Promise<T>): Promise<T> {
  const graph = await openMemoryGraph({ nc: await bus("worker") });
  try {
    return await work(graph);
  } finally {
    await graph.close();
  }
}

async function exportGraph(bus: Bus, session: string, out: string | undefined): Promise<number> {
  const artifact = await withGraph(bus, (graph) => graph.exportSession(session));
  const text = `${JSON.stringify(artifact, null, 2)}\n`;
  if (out) {
    writeFileSync(out, text);
    console.error(`wrote ${out}: ${artifact.nodes.length} nodes, ${artifact.edges.length} edges of session ${session}`);
  } else process.stdout.write(text);
  return 0;
}

async function importGraph(bus: Bus, file: string): Promise<number> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`cannot read ${file} as JSON: ${messageOf(error)}`);
  }
  // Checked before anything is connected to: a bad artifact changes nothing.
  const artifact = validateArtifact(parsed);
  await withGraph(bus, (graph) => graph.importSession(artifact));
  console.log(
    `imported ${artifact.nodes.length} nodes, ${artifact.edges.length} edges into session ${artifact.session_id}`,
  );
  return 0;
}

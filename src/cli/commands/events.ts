import { jetstreamManager } from "@nats-io/jetstream";
import { buckets } from "../../bus/subjects.ts";
import { type ConclaveClient, connect } from "../../client/client.ts";
import { EVENT_KINDS, type EventKind } from "../../contracts/events.ts";
import { MAX_QUERY_LIMIT } from "../../eventlog/query.ts";
import { DEFAULT_SEARCH_LIMIT } from "../../eventlog/search.ts";
import { readTapeStatus, type TapeStatus } from "../../eventlog/tapeStatus.ts";
import { SessionStore } from "../../runtime/sessionStore.ts";
import { sessionArg, UsageError } from "../args.ts";
import { type CommandInput, defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";
import { createEventPrinter, formatBytes, renderLoggedEvent, renderSearchHit } from "../render.ts";

const help = `conclave events: read a session's event log (its tape) back from JetStream

Usage: conclave events --session <id> [--turn N] [--from-seq N] [--follow] [--json [--positions]]
       conclave events query --session <id> [--type KIND[,KIND…]] [--since T] [--until T]
                             [--from-seq N] [--to-seq N] [--turn N] [--limit N] [--json]
       conclave events search --session <id> "words" [range flags as query] [--limit N] [--json]
       conclave events status --session <id> [--json]

  --session ID   the session
  --turn N       only this turn
  --from-seq N   start at this position of the log (see --positions)
  --follow       go on with live events until interrupted
  --json         one JSON line per event (the stored EngineEvent); with query and
                 search one {"position","time","event"…} line each; status: one object
  --positions    with --json, one {"position":N,"event":{…}} per line (the events
                 of one stored batch share theirs): resume after the last line
                 with --from-seq N+1

query: one line per event in a range: position, stored time, turn.seq, kind, summary
  --type KINDS   only these kinds, comma-separated (TURN_COMPLETED,TOOL_CALL_FINISHED)
  --since T      stored at or after T: an ISO time (2026-11-26T10:00:00Z), or a time
                 before now: 10m, 2h, 30s, 1d (also --since=-10m)
  --until T      stored at or before T (same forms)
  --to-seq N     up to this position
  --limit N      at most N events, the first of the range (query 1000, search ${DEFAULT_SEARCH_LIMIT})

search: events whose payload holds every word (case-insensitive; values, not field
  names; a word may match inside a longer one), with an excerpt, the words marked

status: events, turns and bytes the session stores, its first and last event, and
  its last replay checkpoint (read from the session store in the runner role, as
  \`conclave replay\` does)

Nothing stored for the session (or no turn run on this server yet) is an empty
result, not a failure: no output, and a note on stderr unless --json.`;

const MODES = ["query", "search", "status"] as const;
type Mode = (typeof MODES)[number] | "read";

const flags = {
  session: { type: "string", short: "s" },
  turn: { type: "string" },
  "from-seq": { type: "string" },
  "to-seq": { type: "string" },
  type: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  limit: { type: "string" },
  follow: { type: "boolean" },
  positions: { type: "boolean" },
  json: { type: "boolean" },
} as const;
type Values = CommandInput<typeof flags>["values"];

/** The flags each mode takes besides --session and --json. */
const ALLOWED: Record<Mode, readonly (keyof typeof flags)[]> = {
  read: ["turn", "from-seq", "follow", "positions"],
  query: ["turn", "from-seq", "to-seq", "type", "since", "until", "limit"],
  search: ["turn", "from-seq", "to-seq", "type", "since", "until", "limit"],
  status: [],
};

export default defineCommand({
  help,
  flags,
  positionals: true,
  role: "observer",
  async run({ values, positionals, bus }) {
    const [first, ...rest] = positionals;
    const mode: Mode = first === undefined ? "read" : (MODES.find((name) => name === first) ?? unknownMode(first));
    if (mode !== "search" && rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
    for (const name of Object.keys(values) as (keyof typeof flags)[])
      if (name in flags && name !== "session" && name !== "json" && !ALLOWED[mode].includes(name))
        throw new UsageError(`--${name} does not go with ${mode === "read" ? "conclave events" : `events ${mode}`}`);
    const session = sessionArg(values.session);
    if (mode === "read") return readLog(session, values, bus);
    if (mode === "status") return printStatus(session, values.json === true, bus);
    const range = rangeOf(values);
    if (mode === "query") {
      const client = await connect({ nc: await bus() });
      const found = await client.queryEvents(session, range);
      for (const logged of found) console.log(values.json ? JSON.stringify(logged) : renderLoggedEvent(logged));
      if (found.length === 0 && !values.json) console.error(`no events of session ${session} in that range`);
      return EXIT.ok;
    }
    const text = rest.join(" ");
    if (!/[\p{L}\p{N}]/u.test(text))
      throw new UsageError('give the words to search for: events search --session S "words"');
    const client = await connect({ nc: await bus() });
    const hits = await client.searchEvents(session, text, range);
    for (const hit of hits) console.log(values.json ? JSON.stringify(hit) : renderSearchHit(hit));
    if (hits.length === 0 && !values.json)
      console.error(`no event of session ${session} holds ${JSON.stringify(text)}`);
    return EXIT.ok;
  },
});

function unknownMode(word: string): never {
  throw new UsageError(`unknown events subcommand '${word}': query, search or status (or none, to read the log)`);
}

/** A whole number from `min` given to `--name`, or a usage error. */
function wholeFlag(
  name: string,
  value: string | undefined,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(number) || number < min || number > max)
    throw new UsageError(
      `--${name} must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? "" : ` to ${max}`}`,
    );
  return number;
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--since`/`--until`: an ISO 8601 time, or `<n><s|m|h|d>` before `now` (a leading `-` allowed, though
 * parseArgs takes `--since -10m` only as `--since=-10m`); epoch ms.
 */
export function timeFlag(name: string, value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const relative = /^-?(\d+)([smhd])$/.exec(value.trim());
  if (relative) return now - Number(relative[1]) * UNIT_MS[relative[2]!]!;
  const parsed = /^\d{4}-\d{2}-\d{2}/.test(value.trim()) ? Date.parse(value.trim()) : Number.NaN;
  if (Number.isNaN(parsed))
    throw new UsageError(`--${name} must be an ISO time (2026-11-26T10:00:00Z) or a time before now (10m, 2h, 1d)`);
  return parsed;
}

/** The range flags of query and search, checked. */
function rangeOf(values: Values) {
  const kinds = values.type
    ?.split(",")
    .map((kind) => kind.trim().toUpperCase())
    .filter(Boolean);
  for (const kind of kinds ?? [])
    if (!EVENT_KINDS.includes(kind as EventKind))
      throw new UsageError(`--type: unknown event kind '${kind}' (e.g. TURN_COMPLETED, TOOL_CALL_FINISHED)`);
  const fromSeq = wholeFlag("from-seq", values["from-seq"]);
  const toSeq = wholeFlag("to-seq", values["to-seq"]);
  if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq)
    throw new UsageError("--from-seq must not be after --to-seq");
  const now = Date.now();
  const since = timeFlag("since", values.since, now);
  const until = timeFlag("until", values.until, now);
  if (since !== undefined && until !== undefined && since > until)
    throw new UsageError("--since must not be after --until");
  const turnId = wholeFlag("turn", values.turn);
  const limit = wholeFlag("limit", values.limit, 1, MAX_QUERY_LIMIT);
  return {
    ...(kinds && kinds.length > 0 ? { kinds: kinds as EventKind[] } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(fromSeq !== undefined ? { fromSeq } : {}),
    ...(toSeq !== undefined ? { toSeq } : {}),
    ...(turnId !== undefined ? { turnId } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
}

/** `conclave events --session S`: the log as it was written, optionally followed live. */
async function readLog(session: string, values: Values, bus: CommandInput<typeof flags>["bus"]): Promise<number> {
  const turn = values.turn === undefined ? undefined : Number(values.turn);
  if (turn !== undefined && (!Number.isInteger(turn) || turn < 1))
    throw new UsageError("--turn must be a whole number from 1");
  const fromSeq = values["from-seq"] === undefined ? undefined : Number(values["from-seq"]);
  if (fromSeq !== undefined && (!Number.isInteger(fromSeq) || fromSeq < 1))
    throw new UsageError("--from-seq must be a whole number from 1");

  const nc = await bus();
  const stop = new AbortController();
  const interrupted = () => stop.abort();
  process.once("SIGINT", interrupted);
  try {
    const client: ConclaveClient = await connect({ nc });
    const print = createEventPrinter(values.json);
    let count = 0;
    for await (const { position, event } of client.events(session, {
      ...(turn !== undefined ? { turnId: turn } : {}),
      ...(fromSeq !== undefined ? { fromSeq } : {}),
      follow: values.follow === true,
      signal: stop.signal,
    })) {
      count += 1;
      if (values.json && values.positions) console.log(JSON.stringify({ position, event }));
      else print(event);
    }
    if (count === 0 && !values.json)
      console.error(`no events stored for session ${session}${turn ? ` turn ${turn}` : ""}`);
    return EXIT.ok;
  } finally {
    process.off("SIGINT", interrupted);
  }
}

/** `events status`: in the runner role, which reads the session store's checkpoint (as `conclave replay`). */
async function printStatus(session: string, json: boolean, bus: CommandInput<typeof flags>["bus"]): Promise<number> {
  const nc = await bus("runner");
  const status = await readTapeStatus(nc, session, async (id) => {
    // No session store yet (no turn ever ran): none is created for a read; StreamNotFound reads as no checkpoint.
    await (await jetstreamManager(nc)).streams.info(`KV_${buckets.sessions}`);
    return (await SessionStore.open(nc)).checkpoint(id);
  });
  if (json) console.log(JSON.stringify(status));
  else console.log(describeStatus(status));
  return EXIT.ok;
}

function describeStatus(status: TapeStatus): string {
  const lines = [
    `session ${status.session_id}: ${status.events} event(s) in ${status.turns} turn(s), ${formatBytes(status.bytes)}`,
  ];
  if (status.first && status.last) {
    lines.push(`  first  #${status.first.position}  ${status.first.time}`);
    lines.push(`  last   #${status.last.position}  ${status.last.time}`);
  }
  lines.push(
    status.checkpoint
      ? `  last checkpoint: through turn ${status.checkpoint.through_turn_id} (${status.checkpoint.turns_completed} turn(s) completed)`
      : status.checkpoint_unavailable
        ? `  last checkpoint: unavailable (${status.checkpoint_unavailable})`
        : "  last checkpoint: none yet",
  );
  return lines.join("\n");
}

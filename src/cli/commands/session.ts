import { type ConclaveClient, connect } from "../../client/client.ts";
import { type CompactionRequestOptions, compactionRequest } from "../../client/compaction.ts";
import { printable } from "../../client/printable.ts";
import { MAX_ERASE_WAIT_MS } from "../../contracts/erase.ts";
import { SessionId } from "../../contracts/ids.ts";
import { messageOf } from "../../errors.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave session: act on a whole session

Usage:
  conclave session erase SESSION [--by WHO] [--reason TEXT] [--wait MS] [--with-forks] [--json]
  conclave session memory SESSION [--json]
  conclave session compact SESSION --reason TEXT [--instructions TEXT] [--json]
  conclave session compaction SESSION [--json]

  --by WHO       who asks, kept in the audit record (an id, not content)
  --reason TEXT  why, kept in the audit record (erase) or the request (compact)
  --instructions TEXT  compact: what the summary should keep
  --wait MS      how long to wait for turns in flight to end once cancelled  [30000]
  --with-forks   erase the sessions forked from it too (and theirs); without
                 it they are named in the record and kept
  --json         print the audit record as JSON

erase removes everything stored of the session, through a runner: its
schedules are stopped, its turns still pending or running are cancelled (as
conclave cancel does) and waited for; then its events, turn statuses, WAL
entries, snapshots, idempotency keys, episodes, memory graph, ledgers,
blackboards, suspended runs, schedules and dead letters are deleted with their
bytes overwritten on disk, and the memory workers drop their copies
(docs/operations.md, "Erasing a session"). A record of the erase with no
content (ids, times, counts, what was kept and why) is kept in the
CONCLAVE_AUDIT stream. A turn that does not end in time exits 3 with only the
schedules stopped; ask again.

memory prints the session's working memory (docs/knowledge.md): its version,
the turn and agent of its last update, and its content as JSON; version 0 and
{} while no agent has changed it.

compact asks the session's next turn to compact its context whatever the
pressure (docs/context.md, "Compaction requests"): the request is recorded on
the session's log (COMPACTION_REQUESTED), and the turn's CONTEXT_COMPACTED
names the reason "requested" and consumes it. Without --instructions, the
runner's CONCLAVE_COMPACTION_INSTRUCTIONS apply when it sets them.

compaction prints the request still pending (its reason and instructions), or
that none is.`;

export default defineCommand({
  help,
  flags: {
    by: { type: "string" },
    reason: { type: "string" },
    instructions: { type: "string" },
    wait: { type: "string" },
    "with-forks": { type: "boolean" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const [verb, session, ...rest] = positionals;
    if (!VERBS.includes(verb ?? "") || session === undefined || rest.length > 0)
      throw new UsageError(
        "usage: conclave session erase SESSION, conclave session memory SESSION, conclave session compact SESSION --reason TEXT or conclave session compaction SESSION",
      );
    if (!SessionId.safeParse(session).success)
      throw new UsageError(`bad session id ${JSON.stringify(session)}: 1-64 characters of A-Z, a-z, 0-9, '_' or '-'`);
    if (verb === "memory") return printWorkingMemory(await connect({ nc: await bus() }), session, values.json === true);
    if (verb === "compact") {
      if (values.reason === undefined) throw new UsageError("session compact needs --reason TEXT (why it is asked)");
      const asked = {
        reason: values.reason,
        ...(values.instructions !== undefined ? { instructions: values.instructions } : {}),
      };
      // Checked before connecting: a bad reason is a usage error, not a request.
      try {
        compactionRequest(asked);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      return requestCompactionNow(await connect({ nc: await bus() }), session, asked, values.json === true);
    }
    if (verb === "compaction")
      return printPendingCompaction(await connect({ nc: await bus() }), session, values.json === true);
    if (values.instructions !== undefined) throw new UsageError("--instructions is for session compact");
    const waitMs = values.wait === undefined ? undefined : Number(values.wait);
    if (waitMs !== undefined && !(Number.isInteger(waitMs) && waitMs >= 0 && waitMs <= MAX_ERASE_WAIT_MS))
      throw new UsageError(`--wait is a whole number of ms from 0 to ${MAX_ERASE_WAIT_MS}`);
    const client = await connect({ nc: await bus() });
    const record = await client.erase(session, {
      ...(values.by ? { requested_by: values.by } : {}),
      ...(values.reason ? { reason: values.reason } : {}),
      ...(waitMs !== undefined ? { wait_ms: waitMs } : {}),
      ...(values["with-forks"] ? { with_forks: true } : {}),
    });
    if (values.json) {
      console.log(JSON.stringify(record));
      return EXIT.ok;
    }
    const counts = Object.entries(record.erased)
      .filter(([, count]) => count > 0)
      .map(([store, count]) => `${store} ${count}`);
    const cancelled =
      record.cancelled_turns.length > 0 ? `; cancelled turn(s) ${record.cancelled_turns.join(", ")}` : "";
    const forks = record.forks?.length
      ? `; fork(s) ${record.forks.join(", ")} ${record.forks_erased ? "erased too" : "kept (--with-forks erases them)"}`
      : "";
    console.log(
      printable(
        `session ${session} erased: ${counts.length > 0 ? counts.join(", ") : "nothing was stored"}${cancelled}${forks}`,
        {
          newlines: false,
        },
      ),
    );
    return EXIT.ok;
  },
});

const VERBS = ["erase", "memory", "compact", "compaction"];

/** `session compact`: records the request, and says what the next turn does. */
async function requestCompactionNow(
  client: ConclaveClient,
  session: string,
  asked: CompactionRequestOptions,
  json: boolean,
): Promise<number> {
  const recorded = await client.requestCompaction(session, asked);
  if (json) {
    console.log(JSON.stringify({ session_id: session, ...recorded }));
    return EXIT.ok;
  }
  const instructions = recorded.instructions ? `; instructions: ${recorded.instructions}` : "";
  console.log(
    printable(
      `compaction requested for session ${session}: its next turn compacts (reason: ${recorded.reason}${instructions})`,
      { newlines: false },
    ),
  );
  return EXIT.ok;
}

/** `session compaction`: the pending request, or that none is. */
async function printPendingCompaction(client: ConclaveClient, session: string, json: boolean): Promise<number> {
  const pending = await client.pendingCompaction(session);
  if (json) {
    console.log(JSON.stringify({ session_id: session, pending }));
    return EXIT.ok;
  }
  const line = pending
    ? `session ${session}: compaction pending (reason: ${pending.reason}${pending.instructions ? `; instructions: ${pending.instructions}` : ""})`
    : `session ${session}: no compaction pending`;
  console.log(printable(line, { newlines: false }));
  return EXIT.ok;
}

/** `session memory`: the session's working memory, as JSON or as a header line and the content. */
async function printWorkingMemory(client: ConclaveClient, session: string, json: boolean): Promise<number> {
  const record = await client.workingMemory(session);
  if (json) {
    console.log(JSON.stringify(record));
    return EXIT.ok;
  }
  const last =
    record.version > 0
      ? `, last updated in turn ${record.turn_id} by ${record.updated_by} at ${record.updated_at}`
      : "";
  console.log(printable(`session ${session} working memory: version ${record.version}${last}`, { newlines: false }));
  console.log(printable(JSON.stringify(record.memory, null, 2)));
  return EXIT.ok;
}

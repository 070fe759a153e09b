import type { WorkerMerge, WorkerResult, WorkerResultsState } from "../../contracts/workerResults.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { LEDGER_FLAGS, ledgerCommand, show, withClient } from "../ledgerView.ts";

const help = `conclave results: a session's worker results (work done outside the turns)

Usage:
  conclave results record --session ID --worker NAME "summary" [--data JSON] [--error] [--id ID]
  conclave results list   --session ID
  conclave results merge  --session ID
  conclave results clear  --session ID [--all]

  --worker NAME  who did the work (a job, a delegate, a person)
  --data JSON    its structured output, a JSON object (at most 16 KiB): merged key by key
  --error        the work failed: the result is named by a merge, not merged
  --all          clear the last merge too, not only the pending results
  --user-id ID   the end user the change is made for (recorded as by user:ID)
  --json         the answer as JSON

Until merged or cleared, the session's next turns show each pending result to
their agents; after a merge, its values. A merge takes the results in the order
they were recorded: a later worker's value wins a key, and the key is named as
a conflict. Every change is an event on the session's log. Exit 2 for bad
input or an id taken by another result (conflict).`;

const resultLine = (result: WorkerResult): string =>
  `${result.id}  ${result.status.padEnd(5)} ${result.worker}: ${result.summary}${result.data ? `  data ${JSON.stringify(result.data)}` : ""}`;

function mergeLines(merge: WorkerMerge): string[] {
  return [
    `merge ${merge.id} of ${merge.results.length} result(s) at ${merge.at}`,
    ...Object.entries(merge.merged).map(([key, value]) => `  ${key} = ${JSON.stringify(value)}`),
    ...merge.conflicts.map(
      (conflict) => `  conflict on ${conflict.key}: ${conflict.workers.join(", ")} (kept ${conflict.kept}'s)`,
    ),
    ...merge.errors.map((failed) => `  failed: ${failed.worker}: ${failed.summary}`),
  ];
}

const stateLines = (state: WorkerResultsState): string[] => [
  ...state.pending.map(resultLine),
  ...(state.last_merge ? mergeLines(state.last_merge) : []),
];

function dataArg(value: string | undefined): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(value);
  } catch {
    throw new UsageError("--data must be a JSON object, e.g. --data '{\"rows\": 120}'");
  }
  if (typeof data !== "object" || data === null || Array.isArray(data))
    throw new UsageError("--data must be a JSON object, e.g. --data '{\"rows\": 120}'");
  return data as Record<string, unknown>;
}

export default defineCommand({
  help,
  flags: {
    ...LEDGER_FLAGS,
    worker: { type: "string" },
    data: { type: "string" },
    error: { type: "boolean" },
    id: { type: "string" },
    all: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const { verb, text, session, forUser } = ledgerCommand(values, positionals);
    switch (verb) {
      case "record": {
        if (!values.worker)
          throw new UsageError(
            'give --worker, e.g. conclave results record --session S --worker etl "loaded 120 rows"',
          );
        if (!text)
          throw new UsageError(
            'give the summary, e.g. conclave results record --session S --worker etl "loaded 120 rows"',
          );
        const data = dataArg(values.data);
        const result = await withClient(bus, (client) =>
          client.workerResults.record(
            session,
            {
              worker: values.worker as string,
              summary: text,
              ...(values.error ? { status: "error" as const } : {}),
              ...(data !== undefined ? { data } : {}),
              ...(values.id !== undefined ? { id: values.id } : {}),
            },
            forUser,
          ),
        );
        show(values.json, result, result ? [resultLine(result)] : ["merged already: nothing recorded"]);
        return 0;
      }
      case "list": {
        const state = await withClient(bus, (client) => client.workerResults.list(session));
        show(values.json, state, stateLines(state), "no worker results");
        return 0;
      }
      case "merge": {
        const merge = await withClient(bus, (client) => client.workerResults.merge(session, forUser));
        show(values.json, merge, merge ? mergeLines(merge) : [], "nothing to merge");
        return 0;
      }
      case "clear": {
        const state = await withClient(bus, (client) =>
          client.workerResults.clear(session, { ...forUser, all: values.all ?? false }),
        );
        show(values.json, state, stateLines(state), "no worker results");
        return 0;
      }
      default:
        throw new UsageError(`unknown results command '${verb ?? ""}': record, list, merge or clear`);
    }
  },
});

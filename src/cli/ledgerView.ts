import type { ParseArgsConfig } from "node:util";
import { connectBus } from "../bus/connection.ts";
import { type ConclaveClient, connect } from "../client/client.ts";
import type { TaskBlocker, TaskItem, TaskState, TruthFact } from "../contracts/ledger.ts";
import { CONNECTION_FLAGS, connectionFrom, parse, sessionArg } from "./args.ts";
import { printable } from "./printable.ts";

/** The flags every `conclave truth` and `conclave task` verb takes. */
export const LEDGER_FLAGS = {
  ...CONNECTION_FLAGS,
  session: { type: "string", short: "s" },
  "user-id": { type: "string" },
  json: { type: "boolean" },
} as const;

/** A parsed `conclave truth|task` command line (see {@link parseLedgerCommand}). */
export interface LedgerCommand<V> {
  values: V;
  verb: string | undefined;
  words: string[];
  text: string;
  session: string;
  /** The end user the change is made for (`--user-id`), as the client's write options. */
  forUser: { userId?: string };
}

/**
 * A `conclave truth|task` command line: its verb, the words after it (and
 * them joined, `text`), the session, the end user it is for (`--user-id`); null
 * once `--help` is printed.
 */
export function parseLedgerCommand<O extends NonNullable<ParseArgsConfig["options"]>>(
  argv: string[],
  flags: O,
  help: string,
): LedgerCommand<ReturnType<typeof parse<typeof LEDGER_FLAGS & O>>["values"]> | null {
  const { values, positionals } = parse(argv, { ...LEDGER_FLAGS, ...flags }, true);
  const common = values as { help?: boolean; session?: string; "user-id"?: string };
  if (common.help) {
    console.log(help);
    return null;
  }
  const [verb, ...words] = positionals;
  return {
    values,
    verb,
    words,
    text: words.join(" ").trim(),
    session: sessionArg(common.session),
    forUser: common["user-id"] !== undefined ? { userId: common["user-id"] } : {},
  };
}

/** Runs `work` with a client on a connection of the client role, closed afterwards. */
export async function withClient<T>(
  values: { "nats-url"?: string; user?: string; password?: string },
  work: (client: ConclaveClient) => Promise<T>,
): Promise<T> {
  const nc = await connectBus(connectionFrom(values, "client", false));
  try {
    return await work(await connect({ nc }));
  } finally {
    await nc.close();
  }
}

/**
 * Prints `value` as one JSON line with --json, else as `lines` (or `empty` on
 * stderr when there are none), each kept on its line and shown through
 * {@link printable}: a statement's control characters are not the terminal's.
 */
export function show(json: boolean | undefined, value: unknown, lines: string[], empty?: string): void {
  if (json) console.log(JSON.stringify(value));
  else if (lines.length === 0 && empty) console.error(empty);
  else for (const line of lines) console.log(printable(line, { newlines: false }));
}

export const factLine = (fact: TruthFact): string =>
  `${fact.id}  ${fact.status.padEnd(8)} ${fact.statement}${fact.confidence !== undefined ? `  (confidence ${fact.confidence})` : ""}${fact.evidence.length > 0 ? `  [evidence: ${fact.evidence.join("; ")}]` : ""}${fact.resolution ? `  — ${fact.resolution}` : ""}`;

export const itemLine = (item: TaskItem): string =>
  `${item.id}  ${item.status.padEnd(7)} ${item.title}${item.notes.length > 0 ? `  [${item.notes.at(-1)}]` : ""}`;

export const blockerLine = (blocker: TaskBlocker): string =>
  `${blocker.id}  ${blocker.status.padEnd(8)} ${blocker.message}${blocker.item_id ? `  (blocks ${blocker.item_id})` : ""}${blocker.resolution ? `  — ${blocker.resolution}` : ""}`;

/** The task ledger as lines: the spec, then items, then blockers. */
export function taskLines(task: TaskState): string[] {
  const lines: string[] = [];
  if (task.spec) {
    lines.push(`goal: ${task.spec.goal}`);
    for (const constraint of task.spec.constraints) lines.push(`  constraint: ${constraint}`);
    for (const acceptance of task.spec.acceptance) lines.push(`  done when: ${acceptance}`);
  }
  if (task.items.length > 0) lines.push("items:", ...task.items.map((item) => `  ${itemLine(item)}`));
  if (task.blockers.length > 0) lines.push("blockers:", ...task.blockers.map((blocker) => `  ${blockerLine(blocker)}`));
  return lines;
}

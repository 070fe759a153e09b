import { type ConclaveClient, connect } from "../client/client.ts";
import { printable } from "../client/printable.ts";
import type { TaskBlocker, TaskItem, TaskState, TruthFact } from "../contracts/ledger.ts";
import { sessionArg } from "./args.ts";
import type { Bus } from "./command.ts";

/** The flags every `conclave truth` and `conclave task` verb takes (with the connection's, in the client role). */
export const LEDGER_FLAGS = {
  session: { type: "string", short: "s" },
  "user-id": { type: "string" },
  json: { type: "boolean" },
} as const;

/** A `conclave truth|task` command line (see {@link ledgerCommand}). */
export interface LedgerCommand {
  verb: string | undefined;
  words: string[];
  text: string;
  session: string;
  /** The end user the change is made for (`--user-id`), as the client's write options. */
  forUser: { userId?: string };
}

/**
 * A `conclave truth|task` command line: its verb, the words after it (and
 * them joined, `text`), the session, the end user it is for (`--user-id`).
 */
export function ledgerCommand(
  values: { session?: string | undefined; "user-id"?: string | undefined },
  positionals: string[],
): LedgerCommand {
  const [verb, ...words] = positionals;
  return {
    verb,
    words,
    text: words.join(" ").trim(),
    session: sessionArg(values.session),
    forUser: values["user-id"] !== undefined ? { userId: values["user-id"] } : {},
  };
}

/** Runs `work` with a client on the command's connection (the client role). */
export async function withClient<T>(bus: Bus, work: (client: ConclaveClient) => Promise<T>): Promise<T> {
  return work(await connect({ nc: await bus() }));
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

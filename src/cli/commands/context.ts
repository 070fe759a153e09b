import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { supplementCommitInput, supplementPlanInput } from "../../client/supplement.ts";
import { SessionId } from "../../contracts/ids.ts";
import type { SupplementCommitResult, SupplementPlan } from "../../contracts/supplement.ts";
import { messageOf } from "../../errors.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave context: a session's context arena

Usage:
  conclave context supplement plan SESSION TEXT [--scope ID] [--usage N] [--json]
  conclave context supplement commit SESSION TEXT [--tokens N] [--scope ID] [--json]

  --scope ID   the injection's scope (1-128 characters of A-Z, a-z, 0-9, _ . : -):
               a second commit with the same scope records nothing
  --usage N    plan: the tokens the rest of the next turn's context takes, when
               you know it (default: the other zones' floors)
  --tokens N   commit: the most tokens the text may take (a plan's accepted
               tokens): it is cut to them; more than the zone's room is refused
  --json       the plan or the commit as JSON

supplement plan says, writing nothing, how much of TEXT the session's next turn
would put in its agents' context (the supplemental zone, docs/context.md,
"Supplemental injection"): the tokens asked and accepted, the zone's room, and
whether the text would be accepted whole, truncated or dropped, and why.

supplement commit records TEXT on the session's log (SUPPLEMENT_COMMITTED), cut
to --tokens or the zone's room: the session's next turn puts it in its agents'
context once, and its CONTEXT_PLANNED cites it. Exit 2 for bad input (an empty
text, one over 16000 characters, --tokens over the room).`;

export default defineCommand({
  help,
  flags: {
    scope: { type: "string" },
    usage: { type: "string" },
    tokens: { type: "string" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const [noun, verb, session, ...words] = positionals;
    if (noun !== "supplement" || (verb !== "plan" && verb !== "commit") || session === undefined)
      throw new UsageError(
        'usage: conclave context supplement plan|commit SESSION TEXT, e.g. conclave context supplement plan me "The user is on the Pro plan."',
      );
    if (!SessionId.safeParse(session).success)
      throw new UsageError(`bad session id ${JSON.stringify(session)}: 1-64 characters of A-Z, a-z, 0-9, '_' or '-'`);
    const text = words.join(" ");
    const scope = values.scope !== undefined ? { scope: values.scope } : {};
    const json = values.json === true;
    if (verb === "plan") {
      if (values.tokens !== undefined) throw new UsageError("--tokens is for supplement commit");
      const usageTokens = wholeNumber("--usage", values.usage, 0);
      const options = { ...scope, ...(usageTokens !== undefined ? { usageTokens } : {}) };
      checkedBefore(() => supplementPlanInput(text, options));
      const plan = await (await connect({ nc: await bus() })).context.planSupplemental(session, text, options);
      print(json, plan, planLine(session, plan));
      return EXIT.ok;
    }
    if (values.usage !== undefined) throw new UsageError("--usage is for supplement plan");
    const tokens = wholeNumber("--tokens", values.tokens, 1);
    const options = { ...scope, ...(tokens !== undefined ? { tokens } : {}) };
    checkedBefore(() => supplementCommitInput(text, options));
    const committed = await (await connect({ nc: await bus() })).context.commitSupplemental(session, text, options);
    print(json, committed, commitLine(session, committed));
    return EXIT.ok;
  },
});

/** A flag's whole number (at least `min`), or undefined when not given; a usage error otherwise. */
function wholeNumber(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!(Number.isInteger(number) && number >= min))
    throw new UsageError(`${flag} is a whole number of tokens from ${min}, not ${JSON.stringify(value)}`);
  return number;
}

/** Bad input is a usage error, found before connecting. */
function checkedBefore(check: () => unknown): void {
  try {
    check();
  } catch (error) {
    throw new UsageError(messageOf(error));
  }
}

function print(json: boolean, value: unknown, line: string): void {
  console.log(json ? JSON.stringify(value) : printable(line, { newlines: false }));
}

function planLine(session: string, plan: SupplementPlan): string {
  const counts = `${plan.tokens_accepted} of ${plan.tokens_asked} tokens (room ${plan.room_tokens})`;
  if (plan.outcome === "accepted")
    return `session ${session}: the next turn would take the supplement whole: ${counts}`;
  return `session ${session}: the supplement would be ${plan.outcome}: ${counts}; ${plan.reason ?? ""}`;
}

function commitLine(session: string, committed: SupplementCommitResult): string {
  const scope = committed.scope !== undefined ? ` (scope ${committed.scope})` : "";
  if (committed.duplicate)
    return `session ${session}: scope ${committed.scope} was committed before: nothing recorded again`;
  const cut = committed.truncated
    ? `${committed.tokens} of ${committed.tokens_asked} tokens, truncated`
    : `${committed.tokens} tokens`;
  return `supplement committed for session ${session}${scope}: its next turn takes ${cut}`;
}

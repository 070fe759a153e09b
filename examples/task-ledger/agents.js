// An agent that works with the session's ledgers: it reads their digest from its context and
// records what the user asks it to remember as a fact of the truth ledger.
import { defineAgent } from "conclave/worker";
import { z } from "zod";

export const organiser = defineAgent({
  name: "planner.organiser",
  description: "Keeps track of the task: proposes the next open item and remembers what it is told.",
  priority: "ALWAYS_ON",
  output: z.object({
    next_item: z.string().nullable(),
    remembered: z.string().nullable(),
    proposals: z.array(z.object({ kind: z.literal("say"), text: z.string() })).default([]),
  }),
  async run({ input, memory, ledgers, turnId }) {
    // "remember that …": a fact of the truth ledger, recorded as by agent:planner.organiser. Writing the
    // same fact again changes nothing, so a turn run again after a crash adds nothing twice.
    const told = /remember that (.+?)[.!]?$/i.exec(input.user_message)?.[1] ?? null;
    if (told) await ledgers.truth.upsertFact({ statement: told, evidence: [`said in turn ${turnId}`] });
    // The digest of both ledgers came with the turn's context (null when they are empty).
    const next = memory.ledgers?.task.open_items[0]?.replace(/^\[\w+\] /, "") ?? null;
    return {
      next_item: next,
      remembered: told,
      proposals: next ? [{ kind: "say", text: `Next on the list: ${next}.` }] : [],
    };
  },
});

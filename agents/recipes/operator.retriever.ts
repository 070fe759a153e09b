import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { citationOf } from "../../src/contracts/knowledge.ts";

/** What the retrieve step hands on: the machine's facts, what memory holds of the user, and the runbooks' passages. */
const Retrieved = z.object({
  disk: z.unknown().optional(),
  processes: z.unknown().optional(),
  /** What memory knows of the user and the standing instructions they gave (recipe runs retrieve memory). */
  memory: z.object({ user_facts: z.array(z.string()), procedures: z.array(z.string()) }).optional(),
  /** Passages of the knowledge collections the recipe's node names (`knowledge:`), with their citations. */
  knowledge: z.array(z.object({ citation: z.string(), heading: z.string().optional(), text: z.string() })).optional(),
});

/**
 * Operator pipeline, step 2 (retrieve), seed 002's `retrieved_docs`: the system facts the intent
 * needs, through read-only tools; what memory holds of the user; and the passages of the
 * runbooks collection (operator.yaml names it) that match the request, each with its citation.
 */
export const retriever = defineAgent({
  name: "operator.retriever",
  description:
    "Gathers system facts with read-only tools, what memory knows of the user, and matching runbook passages.",
  agency: "operator",
  output: Retrieved,
  run: async ({ recipe, tools, memory, knowledge }) => {
    const parsed = recipe?.inputs.parsed as { intent?: string; entities?: string[] } | undefined;
    const intent = parsed?.intent ?? "system_report";
    const facts: z.input<typeof Retrieved> = {};
    if (intent !== "process_report")
      facts.disk = await tools.call("disk_usage", { path: parsed?.entities?.[0] ?? "/" });
    if (intent !== "disk_report") facts.processes = await tools.call("process_list", { limit: 5 });
    if (memory.userFacts.length > 0 || memory.procedures.length > 0)
      facts.memory = { user_facts: [...memory.userFacts], procedures: [...memory.procedures] };
    if (knowledge.length > 0)
      facts.knowledge = knowledge.map((passage) => ({
        citation: citationOf(passage),
        ...(passage.heading ? { heading: passage.heading } : {}),
        text: passage.text,
      }));
    return facts;
  },
});

import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/** Operator pipeline, step 2 (retrieve): the system facts the intent needs, through read-only tools. */
export const retriever = defineAgent({
  name: "operator.retriever",
  description: "Gathers system facts with read-only tools (disk usage, processes).",
  agency: "operator",
  output: z.object({ disk: z.unknown().optional(), processes: z.unknown().optional() }),
  run: async ({ recipe, tools }) => {
    const parsed = recipe?.inputs.parsed as { intent?: string; entities?: string[] } | undefined;
    const intent = parsed?.intent ?? "system_report";
    const facts: { disk?: unknown; processes?: unknown } = {};
    if (intent !== "process_report")
      facts.disk = await tools.call("disk_usage", { path: parsed?.entities?.[0] ?? "/" });
    if (intent !== "disk_report") facts.processes = await tools.call("process_list", { limit: 5 });
    return facts;
  },
});

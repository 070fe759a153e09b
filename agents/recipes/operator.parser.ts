import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

const Parsed = z.object({
  intent: z.enum(["disk_report", "process_report", "system_report"]),
  entities: z.array(z.string()),
});

/** Operator pipeline, step 1 (parse): what the request wants, and what it names. */
export const parser = defineAgent({
  name: "operator.parser",
  description: "Reads an operator's request: its intent and the things it names.",
  agency: "operator",
  output: Parsed,
  run: async ({ recipe, model }) => {
    const request = String(recipe?.inputs.request ?? "");
    if (model)
      return model.structured({
        system:
          "Classify the operator's request: disk_report (disk space), process_report (what runs), or system_report (both). List the things it names.",
        user: request,
        schema: Parsed,
      });
    const disk = /\b(disk|space|storage|full)\b/i.test(request);
    const process = /\b(process|memory|running|cpu)\b/i.test(request);
    const intent: z.infer<typeof Parsed>["intent"] =
      disk && !process ? "disk_report" : process && !disk ? "process_report" : "system_report";
    return { intent, entities: [...(request.match(/\/[\w./-]+/g) ?? [])] };
  },
});

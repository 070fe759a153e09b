import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/** Publishes an approved piece (here: says where it would go). */
export const publisher = defineAgent({
  name: "ops.publisher",
  description: "Publishes an approved piece.",
  agency: "ops",
  output: z.object({ status: z.literal("published"), channel: z.string(), words: z.number().int() }),
  run: ({ recipe }) => {
    const draft = recipe?.inputs.draft as { text?: unknown } | string | undefined;
    const text = typeof draft === "string" ? draft : String(draft?.text ?? "");
    return { status: "published" as const, channel: "blog", words: text.split(/\s+/).filter(Boolean).length };
  },
});

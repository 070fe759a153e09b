import { setImmediate as yieldToOthers } from "node:timers/promises";
import { z } from "zod";
import { type AgentDefinition, defineAgent } from "../../src/agents/defineAgent.ts";

const Findings = z.object({ source: z.string(), findings: z.array(z.string()) });

/**
 * A researcher that works two streams at once: its reasoning on `thinking`
 * (text/plain) and its findings on `findings` (text/markdown), chunks of the
 * two alternating, as multiplexed streams do.
 */
export function researcher(source: "web" | "papers", offline: readonly string[]): AgentDefinition<typeof Findings> {
  return defineAgent({
    name: `research.${source}`,
    description: `Looks a question up in ${source === "web" ? "web sources" : "the literature"}.`,
    agency: "research",
    output: Findings,
    run: async ({ recipe, model, stream, signal }) => {
      const query = String(recipe?.inputs.query ?? "");
      const findings = model
        ? (
            await model.text({
              system: `List three short findings from ${source} sources, one per line.`,
              user: query,
            })
          )
            .split("\n")
            .map((line) => line.trim())
            .filter(Boolean)
        : offline.map((finding) => `${finding} (${query})`);
      for (const [index, finding] of findings.entries()) {
        if (signal.aborted) break;
        stream("thinking", `checking ${source} source ${index + 1}… `);
        stream("findings", `- ${finding}\n`, { contentType: "text/markdown" });
        await yieldToOthers(); // let the other branch's streams through: they interleave on the wire
      }
      return { source, findings };
    },
  });
}

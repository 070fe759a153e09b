import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

const Reasoning = z.object({ findings: z.array(z.string()), confidence: z.number().min(0).max(1) });

/** Operator pipeline, step 3 (reason): what the facts say, and how sure that is. */
export const reasoner = defineAgent({
  name: "operator.reasoner",
  description: "Draws findings from the system facts, with a confidence.",
  agency: "operator",
  output: Reasoning,
  run: async ({ recipe, model }) => {
    const facts = recipe?.inputs.facts as
      | {
          disk?: { path: string; used_percent: number };
          processes?: { processes: { name: string; rss_kb: number }[] };
          knowledge?: { citation: string; text: string }[];
        }
      | undefined;
    if (model)
      return model.structured({
        system: "From these system facts, list short findings and your confidence (0 to 1) in them.",
        user: JSON.stringify(facts ?? {}),
        schema: Reasoning,
      });
    const findings: string[] = [];
    if (facts?.disk)
      findings.push(
        `${facts.disk.path} is ${facts.disk.used_percent}% full${facts.disk.used_percent >= 90 ? ": clean up soon" : ""}`,
      );
    const top = facts?.processes?.processes[0];
    if (top) findings.push(`${top.name} uses the most memory (${Math.round(top.rss_kb / 1024)} MiB)`);
    // The runbook passage that matched best, cited: what the user's own documents say about it.
    const passage = facts?.knowledge?.[0];
    const said = passage?.text
      .replace(/^#+ .*$/gm, "")
      .trim()
      .split(/(?<=[.!?])\s/)[0];
    if (passage && said) findings.push(`the runbook says (${passage.citation}): ${said}`);
    // Measured facts, read by deterministic rules: as sure as the facts are present.
    return { findings, confidence: findings.length > 0 ? 0.9 : 0.2 };
  },
});

/**
 * `conclave memory insights|dismiss|review|refresh|clear-cache` (src/cli/commands/memory.ts):
 * a session's memory insights, through a runner (docs/memory.md, "Insights").
 */
import type { ConclaveClient } from "../client/client.ts";
import { printable } from "../client/printable.ts";
import type { MemoryInsight } from "../contracts/memoryInsights.ts";
import { UsageError } from "./args.ts";

/** The verbs this file answers. */
export const INSIGHT_VERBS = ["insights", "dismiss", "review", "refresh", "clear-cache"] as const;
export type InsightVerb = (typeof INSIGHT_VERBS)[number];

/** What the verbs read of the command line. */
export interface InsightArgs {
  session: string;
  words: string[];
  json: boolean;
  all: boolean;
  edge: string | undefined;
  decision: string | undefined;
}

const line = (insight: MemoryInsight): string => {
  const edge = insight.edge ? `  (review: --edge ${insight.edge})` : "";
  const status = insight.status === "dismissed" ? " [dismissed]" : "";
  return printable(`${insight.id}  ${insight.kind}${status}: ${insight.text}${edge}`, { newlines: false });
};

function printInsights(insights: readonly MemoryInsight[], json: boolean): void {
  for (const insight of insights) console.log(json ? JSON.stringify(insight) : line(insight));
  if (!json && insights.length === 0) console.error("no insights for this session yet");
}

/** Runs one insight verb; its exit code. */
export async function runInsightVerb(client: ConclaveClient, verb: InsightVerb, args: InsightArgs): Promise<number> {
  const { session, json } = args;
  switch (verb) {
    case "insights":
      printInsights(await client.memory.insights(session, { all: args.all }), json);
      return 0;
    case "dismiss": {
      if (args.words.length !== 1)
        throw new UsageError(
          "give the insight's id, e.g. conclave memory dismiss --session S insight.recurring_topic.…",
        );
      const dismissed = await client.memory.dismissInsight(session, args.words[0] as string);
      console.log(json ? JSON.stringify(dismissed) : `dismissed ${dismissed.id}`);
      return 0;
    }
    case "review": {
      const edge = args.edge ?? args.words[0];
      if (!edge) throw new UsageError("give the edge, e.g. conclave memory review --session S --edge prior.… --accept");
      if (args.decision !== "accept" && args.decision !== "reject")
        throw new UsageError("give the decision: --accept or --reject");
      const reviewed = await client.memory.reviewEvolvesEdge(session, { edge, decision: args.decision });
      console.log(json ? JSON.stringify(reviewed) : `${reviewed.status} ${reviewed.edge} (→ ${reviewed.to})`);
      return 0;
    }
    case "refresh": {
      const { refreshed, insights } = await client.memory.refreshIfNeeded(session);
      if (json) console.log(JSON.stringify({ refreshed, insights }));
      else {
        console.log(refreshed ? "refreshed" : "unchanged since the last refresh");
        printInsights(insights, false);
      }
      return 0;
    }
    case "clear-cache": {
      const { cleared } = await client.memory.clearSessionCache(session);
      console.log(
        json
          ? JSON.stringify({ cleared })
          : cleared.length > 0
            ? `cleared: ${cleared.join(", ")}`
            : "nothing of this session was cached",
      );
      return 0;
    }
  }
}

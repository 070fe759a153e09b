import type { AgentContext, Contribution } from "../contracts/agent.ts";
import { Contribution as ContributionSchema } from "../contracts/agent.ts";
import { agentPrompt } from "../llm/prompts.ts";
import { type AgentReviseContext, type AgentRunContext, reviseByMajority } from "./defineAgent.ts";

/** The `run` and `revise` that `councilAnswers` makes, to spread into `defineAgent`'s argument. */
export interface CouncilAnswering {
  /** The first say in a wave: the model from the prompt, or the rules offline. */
  run(ctx: AgentRunContext): Promise<Contribution>;
  /** A deliberation round: the model in revise mode, or `reviseRules` offline. */
  revise(ctx: AgentReviseContext): Promise<Contribution>;
}

/** How a council agent answers: instructions for a model, and the rules the offline mode follows. */
export interface CouncilAnswers {
  /** What the agent is for, as instructions to a model. */
  prompt: string;
  /** The offline mode's first say in a wave: a pure function of the turn as the agent sees it. */
  rules(input: AgentContext): Contribution;
  /** The offline mode's deliberation round. Default: `reviseByMajority`. */
  reviseRules?(input: AgentContext, agentId: string): Contribution;
}

/**
 * The `run` and `revise` of an agent whose answer is a Contribution (the
 * built-in agents): with a model configured, the model answers from the
 * prompt under the council contract; in the offline mode, the rules do.
 *
 * @example
 * ```ts
 * defineAgent({ name: "acme.cheer", description: "…", output: Contribution,
 *   ...councilAnswers({ prompt: "You cheer the user on.", rules: () => quietOutput() }) });
 * ```
 */
export function councilAnswers(answers: CouncilAnswers): CouncilAnswering {
  const ask = (ctx: AgentRunContext, mode: "respond" | "revise", round: number) =>
    ctx.model!.structured({
      ...agentPrompt({ id: ctx.agentId, prompt: answers.prompt }, { mode, round, context: ctx.input }),
      schema: ContributionSchema,
    });
  return {
    run: async (ctx) => (ctx.model ? ask(ctx, "respond", 0) : answers.rules(ctx.input)),
    revise: async (ctx) =>
      ctx.model ? ask(ctx, "revise", ctx.round) : (answers.reviseRules ?? reviseByMajority)(ctx.input, ctx.agentId),
  };
}

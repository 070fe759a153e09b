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
  const ask = (ctx: AgentRunContext, mode: "respond" | "revise", round: number) => {
    // Planned with the encoding of the model that answers (docs/context.md).
    const { system, user } = agentPrompt(
      { id: ctx.agentId, prompt: answers.prompt },
      { mode, round, context: ctx.input },
      { model: ctx.model!.name },
    );
    return ctx.model!.structured({ system: withSkills(system, ctx.skills), user, schema: ContributionSchema });
  };
  return {
    run: async (ctx) => (ctx.model ? ask(ctx, "respond", 0) : answers.rules(ctx.input)),
    revise: async (ctx) =>
      ctx.model ? ask(ctx, "revise", ctx.round) : (answers.reviseRules ?? reviseByMajority)(ctx.input, ctx.agentId),
  };
}

/**
 * The system prompt with the loaded skills' instructions under a "Skills"
 * heading, each under its name; unchanged when none is loaded.
 */
export function withSkills(system: string, skills: AgentRunContext["skills"]): string {
  if (skills.length === 0) return system;
  const sections = skills.map((skill) => `### ${skill.name.replace(/\s+/g, " ")}\n${skill.instructions.trim()}`);
  return `${system}\n\n## Skills\nFollow these instructions where they apply to this turn.\n\n${sections.join("\n\n")}`;
}

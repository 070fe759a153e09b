/**
 * `conclave/worker`: define agents and tools, give them skills, and serve them.
 *
 * @example
 * ```ts
 * import { defineAgent, startWorker } from "conclave/worker";
 * import { z } from "zod";
 *
 * const forecaster = defineAgent({
 *   name: "acme.forecaster",
 *   description: "Says whether the user's plans need an umbrella.",
 *   output: z.object({ umbrella: z.boolean() }),
 *   run: ({ input }) => ({ umbrella: /rain/i.test(input.user_message) }),
 * });
 * await startWorker({ agents: [forecaster] });
 * ```
 *
 * @packageDocumentation
 */

export type { AgentModelChoice, AgentModelSpec } from "./agents/agentModelChoice.ts";
export {
  type AgentTools,
  DelegationDepthError,
  ToolCallRefusedError,
  type ToolRunResult,
} from "./agents/agentTools.ts";
export { builtinAgents, UnknownAgentError } from "./agents/builtins.ts";
export { contributionOf } from "./agents/contributionOf.ts";
export { type CouncilAnswering, type CouncilAnswers, councilAnswers } from "./agents/councilAnswers.ts";
export {
  type AgentDefinition,
  AgentDefinitionError,
  type AgentMemoryView,
  type AgentModel,
  type AgentOutputOf,
  type AgentReviseContext,
  type AgentRunContext,
  type AgentScheduling,
  type AgentSpec,
  defineAgent,
  hasClaim,
  isAgentDefinition,
  quietOutput,
  type RemoteDelegate,
  reviseByMajority,
} from "./agents/defineAgent.ts";
export { InvalidAgentOutputError } from "./agents/runAgent.ts";
export {
  type AgentContext,
  type AgentManifest,
  type AgentPriority,
  Contribution,
  type ProposedClaim,
} from "./contracts/agent.ts";
export type { SkillCompletion } from "./contracts/skill.ts";
export type { ToolEffect, ToolManifest, ToolRefusal, ToolRisk } from "./contracts/tool.ts";
export { WORKING_MEMORY_TOOL, type WorkingMemoryView } from "./contracts/workingMemory.ts";
export { type LlmConfig, LOCAL_SERVER_API_KEY, llmConfigFromEnv } from "./llm/config.ts";
export {
  definePatchAdapter,
  type PatchAdapter,
  type PatchContext,
  type PatchResult,
  type PatchStatus,
  type ProceduralPatch,
  type RecordedPatchResult,
} from "./memory/procedural/patch.ts";
export type { AgentSkill } from "./skills/agentSkills.ts";
export { type AgentSkills, UnknownSkillError } from "./skills/agentSkillsView.ts";
export { LoadStrategy, SkillDefinition, SkillDefinitionError } from "./skills/definition.ts";
export { instructionsOf, loadSkills, type Skill } from "./skills/load.ts";
export {
  SKILL_ROUTER_DEFAULTS,
  type SkillRank,
  SkillRouter,
  type SkillRouterOptions,
  type SkillSelection,
} from "./skills/router.ts";
export {
  defineTool,
  isToolDefinition,
  type ToolDefinition,
  ToolDefinitionError,
  type ToolRunContext,
  type ToolSpec,
} from "./tools/defineTool.ts";
export {
  DEFAULT_TOOL_POLICY,
  ToolPolicy,
  type ToolPolicyInput,
  ToolVerdict,
} from "./tools/policy.ts";
export { startWorker } from "./workers/startWorker.ts";
export { CORE_SERVICES, type CoreService, type WorkerHandle, type WorkerOptions } from "./workers/workerOptions.ts";

import { z } from "zod";
import { ContextSummarySchema } from "./context.ts";
import { AgentId, MAX_CALL_TIMEOUT_MS, SessionId, TurnId } from "./ids.ts";
import { KnowledgePassage, NamedCollections } from "./knowledge.ts";
import { LedgerDigest } from "./ledger.ts";
import { type SkillCompletion, SkillReplyFields } from "./skill.ts";
import { ActiveSkillIds } from "./skillActivations.ts";
import { SUPPLEMENT_TEXT_MAX_CHARS, SUPPLEMENTS_KEPT } from "./supplement.ts";
import { ToolManifest, ToolName } from "./tool.ts";
import { Usage } from "./usage.ts";
import { WireJsonSchema } from "./wireJsonSchema.ts";
import { WorkingMemoryView } from "./workingMemory.ts";
import { Claim, Episode, Modulators, Sensors, Stance, StanceDelta } from "./workspace.ts";

/**
 * The six built-in agencies. The scheduler gives agents of these agencies their
 * sensor and modulator boosts; any other agency is a free label and is scheduled
 * by its triggers and priority alone.
 */
export const AGENCIES = ["emotion", "reasoning", "social", "planning", "inhibition", "monitoring"] as const;

/**
 * An agent's agency: a free label, one lowercase word (`emotion`, `weather`, `legal_review`).
 * Not "role": a role is who a process is on the bus (client, runner, worker, observer).
 */
export const Agency = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,39}$/, "agency must be a lowercase word of a-z, 0-9 and '_' (at most 40 characters)");
export type Agency = z.infer<typeof Agency>;

/** ALWAYS_ON agents run in wave 0; MONITOR agents get a base score; SCHEDULED only when scored. */
export const AgentPriority = z.enum(["ALWAYS_ON", "MONITOR", "SCHEDULED"]);
export type AgentPriority = z.infer<typeof AgentPriority>;

/** A claim as an agent proposes it; the workspace adds source, support and opposition. */
export const ProposedClaim = z.object({
  id: z.string().min(1).max(120),
  text: z.string().min(1).max(500),
  confidence: z.number().min(0).max(1),
});
export type ProposedClaim = z.infer<typeof ProposedClaim>;

/**
 * The council contract: what an agent contributes to the turn's shared
 * workspace, whatever its own output looks like. Claims and the agents'
 * support or opposition feed deliberation, proposals feed the council's
 * decision (`do_not` ones also the critics), the stance delta the session's
 * stance. An agent's contribution is taken from its output's fields of the
 * same names, or from its `contribute` function (see `defineAgent`).
 */
export const Contribution = z.object({
  claims: z.array(ProposedClaim).max(8).default([]),
  /** Claim ids (from any agent) this agent backs or contests. */
  supports: z.array(z.string()).max(16).default([]),
  opposes: z.array(z.string()).max(16).default([]),
  /** In a revision round: own claims the agent takes back, and claims it stops opposing. */
  withdraws: z.array(z.string()).max(16).default([]),
  concedes: z.array(z.string()).max(16).default([]),
  /** Suggestions for the council: what to say, and what never to say. */
  proposals: z
    .array(z.object({ kind: z.enum(["say", "do_not", "ask"]), text: z.string().min(1).max(300) }))
    .max(8)
    .default([]),
  stance_delta: StanceDelta.default({}),
});
export type Contribution = z.infer<typeof Contribution>;

/**
 * The JSON Schema of an agent's own output, as `z.toJSONSchema` writes it.
 * Runners check answers against it, its patterns with RE2: one RE2 cannot
 * run (backreferences, lookaround) makes the manifest invalid.
 */
export const OutputJsonSchema = WireJsonSchema;

/**
 * What a worker announces about an agent it hosts: enough for the scheduler
 * to plan it and for a runner to check its answers.
 */
export const AgentManifest = z.object({
  id: AgentId,
  /** The agent's agency: a free label (see Agency); `defineAgent`'s `agency`. */
  agency: Agency,
  priority: AgentPriority,
  /** Sensor names whose value above 0.3 makes this agent a candidate. */
  triggers: z.array(z.string()),
  cooldown_s: z.number().min(0),
  /** Most tokens one answer of this agent may use (LLM mode); counted against the turn's budget. */
  token_budget: z.number().int().min(0),
  description: z.string().max(500),
  /** The JSON Schema of the agent's output; absent: the output is a Contribution. */
  output_schema: OutputJsonSchema.optional(),
  /**
   * The model the agent asks for (`defineAgent`'s `model`); absent: its worker's. The model it
   * runs on is its endpoint's `model` metadata (`offline` when the worker has no LLM server).
   */
  model: z.string().min(1).max(256).optional(),
  /**
   * The tools the agent may call when the built-in pipeline schedules it (`defineAgent`'s `tools`):
   * the runner offers those a live worker hosts, under its tool policy. Recipe nodes name their own.
   */
  tools: z.array(ToolName).max(32).optional(),
  /** The agents it may delegate to in the pipeline (`defineAgent`'s `delegates`), remote ones included. */
  delegates: z.array(AgentId).max(16).optional(),
  /** Which of its delegates are remote A2A agents, and where their cards are. */
  remote_delegates: z.record(AgentId, z.object({ card_url: z.string().url().max(2_048) })).optional(),
  /**
   * The knowledge collections its context is searched in when the pipeline asks it (`defineAgent`'s
   * `knowledge`): the runner adds the chunks that pass the `rag_external` gating (docs/knowledge.md).
   */
  knowledge: NamedCollections.optional(),
});
export type AgentManifest = z.infer<typeof AgentManifest>;

/** Everything an agent may read: a snapshot of the turn's workspace. */
export const AgentContext = z.object({
  user_message: z.string(),
  sensors: Sensors,
  modulators: Modulators,
  stance: Stance,
  claims: z.array(Claim),
  episodes: z.array(Episode),
  /** What the memory knows of the user, and threads left open, for this turn (may be empty). */
  user_facts: z.array(z.string()).optional(),
  open_threads: z.array(z.string()).optional(),
  /** Standing instructions on how to answer the user, learnt by procedural memory ("Keep answers short"). */
  procedures: z.array(z.string()).max(20).optional(),
  /**
   * The persona memory evolved for the session, as the context arena kept it in the
   * `identity_persona` zone (cut to the zone's budget, with a note, when longer).
   */
  persona: z.string().max(4_000).optional(),
  /**
   * The agent's identity file (`<CONCLAVE_IDENTITY_DIR>/<agent-id>/identity.md`), added by the worker
   * hosting it: first in the `identity_persona` zone. Absent: the agent has none.
   */
  identity: z.string().max(8_000).optional(),
  /** The session's truth and task ledgers in short (absent when both are empty). */
  ledgers: LedgerDigest.optional(),
  /** The session's older turns in short, once the context arena compacted them (docs/context.md): `episodes` holds only later turns. */
  summary: ContextSummarySchema.optional(),
  /** Tool calls that failed earlier in the turn (`<tool>: <message>`), newest first. */
  tool_failures: z.array(z.string().max(2_000)).max(20).optional(),
  /**
   * Supplements the application committed for this turn (docs/context.md, "Supplemental injection"), as
   * the context arena kept them in the `supplemental` zone, oldest first; absent: none.
   */
  supplemental: z
    .array(
      z.object({
        seq: z.number().int().min(1),
        scope: z.string().max(128).optional(),
        text: z.string().max(SUPPLEMENT_TEXT_MAX_CHARS + 100),
      }),
    )
    .max(SUPPLEMENTS_KEPT)
    .optional(),
  /**
   * Chunks of the knowledge collections the agent (or its recipe node) names, found for this call
   * and kept within the `rag_external` zone's budget, best first, each with its citation.
   */
  knowledge: z.array(KnowledgePassage).max(32).optional(),
  /**
   * The session's working memory (docs/knowledge.md), as it stands when the agent is asked: present
   * when the runner declares a working memory schema (version 0 and `{}` before the first update).
   */
  working_memory: WorkingMemoryView.optional(),
});
export type AgentContext = z.infer<typeof AgentContext>;

/** What an agent is given when a recipe's node calls it (see docs/recipes.md). */
export const RecipeCallContext = z.object({
  recipe: z.string(),
  node: z.string(),
  /** The node's inputs, read off the blackboard by its `inputs_map` (the whole blackboard without one). */
  inputs: z.record(z.string(), z.unknown()),
  system_prompt: z.string().optional(),
  /** An evaluator's critique of the previous attempt (also appended to `context.user_message`). */
  feedback: z.string().optional(),
});
export type RecipeCallContext = z.infer<typeof RecipeCallContext>;

export const AgentRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  agent_id: AgentId,
  wave: z.number().int().min(0),
  /**
   * `respond`: the agent's first say in a wave. `revise`: a deliberation round
   * asks it to reconsider the contested claims in `context.claims`.
   */
  mode: z.enum(["respond", "revise"]).default("respond"),
  /** The deliberation round, in `revise` mode. */
  round: z.number().int().min(0).default(0),
  /** The agent must reply within this budget or be counted as failed. At most 10 minutes. */
  timeout_ms: z.number().int().positive().max(MAX_CALL_TIMEOUT_MS),
  context: AgentContext,
  /**
   * Where the worker publishes the agent's named stream parts (AgentStreamPart),
   * when the caller wants them: a subject the caller subscribes to.
   */
  stream_subject: z
    .string()
    .regex(/^conclave\.agentstream\.[A-Za-z0-9_-]{1,64}$/, "stream_subject must be conclave.agentstream.<token>")
    .optional(),
  /** Present when a recipe's node makes the call: its inputs, system prompt and feedback. */
  recipe: RecipeCallContext.optional(),
  /** The tools this call may use (`ctx.tools`); each call goes through the runner on `tool_subject`. */
  tools: z.array(ToolManifest).max(64).optional(),
  /** Where the worker asks the runner for a tool call (ToolGateRequest): a subject the runner serves. */
  tool_subject: z
    .string()
    .regex(/^conclave\.toolgate\.[A-Za-z0-9_-]{1,64}$/, "tool_subject must be conclave.toolgate.<token>")
    .optional(),
  /** Results of this agent call's model calls an earlier attempt of the turn recorded, in order: given back, not asked again. */
  replay: z.object({ model: z.array(z.unknown()).max(1_000) }).optional(),
  /** The agents this call may delegate to (`ctx.delegate`), through the runner on `tool_subject`. */
  delegates: z.array(AgentId).max(64).optional(),
  /** How many delegations deep this call is (0: a node's own agent; see `ctx.delegate`). */
  delegation_depth: z.number().int().min(0).max(100).optional(),
  /**
   * The knowledge collections a recipe node names for this call (`knowledge:`): the runner searches
   * them for `context.knowledge`. A pipeline call's come from the agent's manifest.
   */
  knowledge: NamedCollections.optional(),
  /**
   * Skills the call is given whatever its message routes to: those activated for the session
   * (`client.skills.activate`) and those its recipe or recipe node declares (`skills:`). A worker with
   * skills loads each it has into `ctx.skills` (after the routed ones) and names them in its reply's
   * `skills`; one it lacks is warned about once and left out. Absent: none.
   */
  active_skills: ActiveSkillIds.optional(),
  /** This agent call's durable identity within the turn (the same when a takeover makes it again): its tool calls are keyed by it. */
  call_key: z.string().min(1).max(200).optional(),
});
export type AgentRequest = z.infer<typeof AgentRequest>;

export const AgentReply = z.object({
  agent_id: AgentId,
  /**
   * The agent's own output, valid against its manifest's output_schema. Absent in `revise` mode, and
   * for agents whose output is the council contract itself (no output_schema): see `contribution`.
   */
  output: z.unknown().optional(),
  /** What the council and deliberation take from it (the council contract). */
  contribution: Contribution,
  elapsed_ms: z.number().min(0),
  /** Which worker process served it (`<host>:<pid>`), for provenance. */
  worker: z.string(),
  usage: Usage.optional(),
  /** Ids of the skills loaded into the agent's context for this request (a worker with skills only). */
  skills: z.array(z.string().max(64)).max(1_000).optional(),
  /** Tokens the worker's skill routing embedded the message with, when this request made that call (with its model). */
  routing_usage: Usage.optional(),
  /** The identity file the worker gave the agent (its path and the SHA-256 of its text, never the text). */
  identity: z.object({ path: z.string().max(4_096), sha256: z.string().length(64) }).optional(),
  ...SkillReplyFields,
});
export type AgentReply = z.infer<typeof AgentReply>;

/** Stream ids of agent streams are `<agent_id>:<name>`; a name is a short lowercase token. */
export const AgentStreamName = z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/, "stream name must be a lowercase token");

/**
 * One part of an agent's named stream, published by its worker on the
 * request's `stream_subject` while the agent runs (before its reply).
 */
export const AgentStreamPart = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  agent_id: AgentId,
  stream: AgentStreamName,
  type: z.enum(["start", "chunk", "end"]),
  content_type: z.string().max(100).optional(),
  delta: z.string().max(64_000).optional(),
});
export type AgentStreamPart = z.infer<typeof AgentStreamPart>;

/** A response interceptor changed or dropped part of an agent's named stream (seen by the runner, never sent by workers). */
export interface AgentStreamInterception {
  type: "intercepted";
  session_id: string;
  turn_id: number;
  agent_id: string;
  stream: string;
  interceptor: string;
  action: "redact" | "block";
  reason: string;
}

/** What the caller of an agent sees of its named streams: the parts, as the response interceptors left them. */
export type AgentStreamEvent = AgentStreamPart | AgentStreamInterception;

/** What answering one request produced, where the agent is hosted. */
export interface AgentAnswer {
  /** The agent's own output (respond mode), checked against its schema. */
  output?: unknown;
  contribution: Contribution;
  usage?: Usage;
  /** Ids of the skills the agent was given (a worker with skills only). */
  skills?: string[];
  /** Tokens the skill routing's embeddings call used for this request (none when the worker had the message's routing already). */
  routing_usage?: Usage;
  /** Skills the agent activated (`ctx.skills.activate`). */
  skills_activated?: string[];
  /** Skills the agent completed (`ctx.skills.complete`), each checked against its output schema. */
  skills_completed?: SkillCompletion[];
  /** The identity file the agent was given (see AgentReply's `identity`). */
  identity?: { path: string; sha256: string };
}

import { Annotation, type BaseCheckpointSaver, END, MemorySaver, Send, START, StateGraph } from "@langchain/langgraph";
import { defaultTurnPolicy, zeroSensors } from "../machines/turn/index.ts";
import { CONSENSUS_THRESHOLD } from "../src/cognition/deliberation.ts";
import { SAFETY_INTERRUPT_THRESHOLD } from "../src/cognition/sensors.ts";
import { applyAgentOutput, modulatorsFromSensors, type Workspace } from "../src/cognition/workspace.ts";
import type { AgentContext, AgentRequest, Contribution } from "../src/contracts/agent.ts";
import type { CouncilDecision } from "../src/contracts/council.ts";
import type { CriticResult } from "../src/contracts/critic.ts";
import type { Episode, Modulators, Sensors, Stance } from "../src/contracts/workspace.ts";
import type { TurnServices } from "../src/runtime/turnServices/turnServices.ts";
import type { InProcessPipeline } from "./inprocess.ts";

/**
 * The same pipeline as the turn statechart, as a LangGraph.js StateGraph in one
 * process: the same stages in the same order, each node calling the same stage
 * logic (`TurnServices`, e.g. `localTurnServices()`: src/cognition and agents/).
 *
 *   ingest → sensing_fast → (safety → END)
 *          → context → plan ─Send×N→ agent → merge_wave ─Send×M→ agent → merge_wave
 *          → deliberation (≤ 3 rounds, a loop) → council → (voice) → critics ⇄ voice (re-render on
 *            critic feedback, ≤ policy retries) → memory_commit → END
 *
 * Both waves are fan-outs (Send) of one `agent` node; `merge_wave` applies the
 * wave's replies to the workspace in arrival order, as the turn machine does.
 * Deliberation rounds call the same `deliberate` service as the statechart
 * (later rounds ask the stakeholder agents to revise, in parallel).
 */

interface WaveReply {
  wave: number;
  agent_id: string;
  output: Contribution;
}

const last = <T>() => Annotation<T>;

const TurnState = Annotation.Root({
  session_id: last<string>(),
  turn_id: last<number>(),
  text: last<string>(),
  sensors: last<Sensors | null>(),
  workspace: last<Workspace>(),
  episodes: last<Episode[]>(),
  waves: last<string[][]>(),
  wave: last<number>(),
  /** The agents' replies, appended as they come; `ingest` clears them (a thread keeps state across turns). */
  replies: Annotation<WaveReply[], WaveReply[] | "clear">({
    reducer: (current, update) => (update === "clear" ? [] : current.concat(update)),
    default: () => [],
  }),
  round: last<number>(),
  consensus: last<number>(),
  decision: last<CouncilDecision | null>(),
  response: last<string>(),
  /** Which rendering of the reply this is, and the critics' feedback for the next one. */
  attempt: last<number>(),
  feedback: last<string[]>(),
  critic_results: last<CriticResult[]>(),
  /** The critics asked for another rendering. */
  revise: last<boolean>(),
  streamed: last<number>(),
  stored: last<boolean>(),
});
type State = typeof TurnState.State;

/** What `Send` hands one `agent` task. */
interface AgentTask {
  request: AgentRequest;
}

const agentContext = (state: State): AgentContext => ({
  user_message: state.text,
  sensors: state.sensors ?? zeroSensors(),
  modulators: state.workspace.modulators,
  stance: state.workspace.stance,
  claims: state.workspace.claims,
  episodes: state.episodes,
});

export interface LangGraphOptions {
  /**
   * Compile with a checkpointer (a checkpoint per super-step, per session thread): `true` for a
   * MemorySaver, or a saver of its own (e.g. a PostgresSaver, with `name` set); `false` for none.
   */
  checkpointer: boolean | BaseCheckpointSaver;
  /** The pipeline's name in the report; by default from `checkpointer` ("LangGraph.js", "LangGraph.js + MemorySaver"). */
  name?: string;
}

function buildLangGraphTurn(services: TurnServices, options: LangGraphOptions) {
  const signal = new AbortController().signal;
  const policy = defaultTurnPolicy;

  const sendWave = (state: State) => {
    const agents = state.waves[state.wave];
    if (!agents) return "deliberation";
    const context = agentContext(state);
    return agents.map(
      (agent_id) =>
        new Send("agent", {
          request: {
            session_id: state.session_id,
            turn_id: state.turn_id,
            agent_id,
            wave: state.wave,
            mode: "respond",
            round: 0,
            timeout_ms: policy.agent_timeout_ms,
            context,
          },
        } satisfies AgentTask),
    );
  };

  const graph = new StateGraph(TurnState)
    .addNode("ingest", () => ({
      sensors: null,
      episodes: [],
      waves: [],
      wave: 0,
      replies: "clear" as const,
      round: 0,
      consensus: 1,
      decision: null,
      response: "",
      attempt: 1,
      feedback: [],
      critic_results: [],
      revise: false,
      streamed: 0,
      stored: false,
    }))
    .addNode("sensing_fast", async (state: State) => {
      const sensors = await services.senseFast(state.text);
      return {
        sensors,
        workspace: { ...state.workspace, modulators: modulatorsFromSensors(sensors, state.workspace.modulators) },
      };
    })
    .addNode("safety", async (state: State) => {
      const reply = await services.safetyCouncil(
        { session_id: state.session_id, turn_id: state.turn_id, user_message: state.text, reason: "high_safety_risk" },
        signal,
      );
      return { decision: reply.decision, response: reply.text };
    })
    .addNode("context", async (state: State) => {
      const memory = await services.retrieveMemory(
        { session_id: state.session_id, turn_id: state.turn_id, user_message: state.text, limit: 3 },
        signal,
      );
      return { episodes: memory.episodes };
    })
    .addNode("plan", async (state: State) => {
      const plan = await services.planWaves(
        {
          session_id: state.session_id,
          turn_id: state.turn_id,
          sensors: state.sensors ?? zeroSensors(),
          modulators: state.workspace.modulators,
          token_budget: policy.token_budget,
        },
        signal,
      );
      return { waves: plan.waves.filter((wave) => wave.length > 0), wave: 0 };
    })
    .addNode("agent", async (task: State) => {
      const { request } = task as unknown as AgentTask;
      const reply = await services.callAgent(request, signal);
      return { replies: [{ wave: request.wave, agent_id: reply.agent_id, output: reply.contribution }] };
    })
    .addNode("merge_wave", (state: State) => {
      let workspace = state.workspace;
      for (const reply of state.replies) {
        if (reply.wave === state.wave) workspace = applyAgentOutput(workspace, reply.agent_id, reply.output);
      }
      return { workspace, wave: state.wave + 1 };
    })
    .addNode("deliberation", async (state: State) => {
      const result = await services.deliberate(
        {
          round: state.round,
          workspace: state.workspace,
          session_id: state.session_id,
          turn_id: state.turn_id,
          timeout_ms: policy.agent_timeout_ms,
          context: agentContext(state),
        },
        signal,
      );
      return { workspace: result.workspace, consensus: result.consensus, round: state.round + 1 };
    })
    .addNode("council", async (state: State) => {
      const { decision } = await services.decide(
        {
          session_id: state.session_id,
          turn_id: state.turn_id,
          context: { ...agentContext(state), consensus: state.consensus, proposals: state.workspace.proposals },
        },
        signal,
      );
      return { decision };
    })
    .addNode("voice", async (state: State) => {
      let parts = 0;
      const reply = await services.renderVoice(
        {
          session_id: state.session_id,
          turn_id: state.turn_id,
          user_message: state.text,
          speech_act: state.decision?.speech_act ?? { intent: "respond", key_points: [], do_not: [] },
          thinking: state.decision?.thinking ?? "",
          feedback: state.feedback,
          attempt: state.attempt,
        },
        signal,
        // The statechart logs every stream part; here they are only counted (nothing listens).
        () => {
          parts++;
        },
      );
      return { response: reply.text, streamed: parts };
    })
    .addNode("critics", async (state: State) => {
      const verdict = await services.runCritics(
        {
          session_id: state.session_id,
          turn_id: state.turn_id,
          user_message: state.text,
          response: state.response,
          speech_act: state.decision?.speech_act ?? { intent: "none", key_points: [], do_not: [] },
          attempt: state.attempt,
        },
        signal,
      );
      const failed = verdict.results.filter((result) => !result.passed);
      // Evaluator loop, as the statechart: a failed verdict re-renders with the feedback while retries remain.
      const retry = failed.length > 0 && state.attempt <= policy.max_voice_retries;
      return {
        critic_results: verdict.results,
        revise: retry,
        ...(retry ? { feedback: failed.map((result) => result.feedback), attempt: state.attempt + 1 } : {}),
      };
    })
    .addNode("memory_commit", async (state: State) => {
      const reply = await services.commitMemory(
        {
          episode: {
            session_id: state.session_id,
            turn_id: state.turn_id,
            user_text: state.text,
            response: state.response,
            intent: state.decision?.speech_act.intent ?? "none",
            ts: 0,
          },
        },
        signal,
      );
      return { stored: reply.stored };
    })
    .addEdge(START, "ingest")
    .addEdge("ingest", "sensing_fast")
    .addConditionalEdges(
      "sensing_fast",
      (state: State) => ((state.sensors?.safety_risk ?? 0) > SAFETY_INTERRUPT_THRESHOLD ? "safety" : "context"),
      ["safety", "context"],
    )
    .addEdge("safety", END)
    .addEdge("context", "plan")
    .addConditionalEdges("plan", sendWave, ["agent", "deliberation"])
    .addEdge("agent", "merge_wave")
    .addConditionalEdges("merge_wave", sendWave, ["agent", "deliberation"])
    .addConditionalEdges(
      "deliberation",
      (state: State) =>
        state.consensus >= CONSENSUS_THRESHOLD || state.round >= policy.max_deliberation_rounds
          ? "council"
          : "deliberation",
      ["council", "deliberation"],
    )
    .addConditionalEdges("council", (state: State) => (state.decision?.speak ? "voice" : "critics"), [
      "voice",
      "critics",
    ])
    .addEdge("voice", "critics")
    .addConditionalEdges("critics", (state: State) => (state.revise ? "voice" : "memory_commit"), [
      "voice",
      "memory_commit",
    ])
    .addEdge("memory_commit", END);

  if (options.checkpointer === false) return graph.compile();
  return graph.compile({ checkpointer: options.checkpointer === true ? new MemorySaver() : options.checkpointer });
}

/** A session's carry-over between turns, as the session statechart keeps it. */
interface Carry {
  turn_id: number;
  modulators: Modulators;
  stance: Stance;
}

export function langGraphPipeline(
  services: TurnServices,
  options: LangGraphOptions,
  start: { modulators: Modulators; stance: Stance },
): InProcessPipeline {
  const graph = buildLangGraphTurn(services, options);
  const sessions = new Map<string, Carry>();
  return {
    name: options.name ?? (options.checkpointer ? "LangGraph.js + MemorySaver" : "LangGraph.js"),
    runTurn: async (sessionId, text) => {
      const carry = sessions.get(sessionId) ?? { turn_id: 0, ...start };
      const turnId = carry.turn_id + 1;
      const state = await graph.invoke(
        {
          session_id: sessionId,
          turn_id: turnId,
          text,
          workspace: { claims: [], stance: carry.stance, modulators: carry.modulators, proposals: [] },
        },
        { configurable: { thread_id: sessionId } },
      );
      sessions.set(sessionId, {
        turn_id: turnId,
        modulators: state.workspace.modulators,
        stance: state.workspace.stance,
      });
      return { response: state.response, ok: state.stored === true };
    },
  };
}

import { AGENTS } from "../../../agents/index.ts";
import type { AgentDefinition } from "../../agents/defineAgent.ts";
import { runAgent } from "../../agents/runAgent.ts";
import { decide, safetyCouncil } from "../../cognition/council.ts";
import { CRITICS } from "../../cognition/critics.ts";
import { type Cooldowns, planWaves } from "../../cognition/scheduler.ts";
import { runFastSensors, SEED_SENSORS, type SensorOptions } from "../../cognition/sensors.ts";
import { streamOffline } from "../../cognition/voice.ts";
import type { Episode } from "../../contracts/workspace.ts";
import { passThroughScreen } from "../interception/intercepted.ts";
import { deliberateRound } from "./deliberate.ts";
import type { TurnServices } from "./turnServices.ts";

/** Fast sensors run where the turn runs, whatever the deployment: they are pure and cheaper than any hop. */
export const senseFast: TurnServices["senseFast"] = async (text) => runFastSensors(text);
/** Fast sensors with the given deviations from the reference sensors (docs/SENSORS.md). */
export const senseFastWith =
  (options: SensorOptions): TurnServices["senseFast"] =>
  async (text) =>
    runFastSensors(text, options);

/**
 * Every stage in this process with the offline model: no NATS, no workers.
 * `agents` (default: the built-in ones) answer in this process too.
 * For unit tests of the turn machine and for in-process comparisons.
 */
export function localTurnServices(
  now: () => number = Date.now,
  sensors: SensorOptions = SEED_SENSORS,
  agents: readonly AgentDefinition[] = [...AGENTS.values()],
): TurnServices {
  const episodes = new Map<string, Episode[]>();
  const cooldowns = new Map<string, Cooldowns>();
  const byId = new Map(agents.map((agent) => [agent.manifest.id, agent]));
  const manifests = agents.map((agent) => agent.manifest);
  const callAgent: TurnServices["callAgent"] = async (request, signal, { onStream } = {}) => {
    const agent = byId.get(request.agent_id);
    if (!agent) throw Object.assign(new Error(`no agent ${request.agent_id}`), { code: "no_responders" });
    const started = performance.now();
    const answer = await runAgent(agent, request, { signal, ...(onStream ? { onStream } : {}) });
    return {
      agent_id: request.agent_id,
      ...answer,
      elapsed_ms: performance.now() - started,
      worker: "local",
    };
  };
  return {
    senseFast: senseFastWith(sensors),
    screen: passThroughScreen,
    callAgent,
    deliberate: (input, signal) => deliberateRound(input, callAgent, signal),
    retrieveMemory: async ({ session_id, limit, resolve }) => {
      const kept = episodes.get(session_id) ?? [];
      // A resolution reads the episodes its references name (those still kept); a retrieval, the last few.
      const given = resolve ? kept.filter((episode) => resolve.episodes.includes(episode.turn_id)) : kept.slice(-limit);
      const refs = { episodes: given.map((episode) => episode.turn_id), facts: [], threads: [], procedures: [] };
      if (!resolve) return { episodes: given, user_facts: [], open_threads: [], refs };
      // Kept here: episodes only; whatever else a reference names is gone.
      const named = resolve.episodes.length + resolve.facts.length + resolve.threads.length + resolve.procedures.length;
      return { episodes: given, user_facts: [], open_threads: [], refs, unresolved: named - given.length };
    },
    planWaves: async (request) => {
      const { cooldowns: next, ...plan } = planWaves(manifests, {
        sensors: request.sensors,
        modulators: request.modulators,
        tokenBudget: request.token_budget,
        cooldowns: cooldowns.get(request.session_id) ?? {},
        now: now(),
      });
      cooldowns.set(request.session_id, next);
      return plan;
    },
    decide: async ({ context }) => ({ decision: decide(context) }),
    safetyCouncil: async () => safetyCouncil(),
    renderVoice: async (request, _signal, onStream) => ({ text: streamOffline(request, onStream) }),
    runCritics: async (request) => ({
      results: Object.values(CRITICS).map((critic) => critic(request)),
      failures: [],
      usage: {},
    }),
    commitMemory: async ({ episode }) => {
      const list = episodes.get(episode.session_id) ?? [];
      list.push(episode);
      episodes.set(episode.session_id, list);
      return { summary: `episode ${episode.turn_id} stored (${list.length} in session)`, stored: true };
    },
  };
}

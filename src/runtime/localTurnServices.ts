import { AGENTS } from "../../agents/index.ts";
import { decide, safetyCouncil } from "../cognition/council.ts";
import { runCritics } from "../cognition/critics.ts";
import { computeConsensus, reviseClaims } from "../cognition/deliberation.ts";
import { planWaves } from "../cognition/scheduler.ts";
import { runFastSensors } from "../cognition/sensors.ts";
import { renderOffline } from "../cognition/voice.ts";
import type { Episode } from "../contracts/workspace.ts";
import type { TurnServices } from "./turnServices.ts";

/**
 * Fast sensors and deliberation run where the turn runs, whatever the
 * deployment: they are pure and cheaper than any hop.
 */
export const inProcessStages: Pick<TurnServices, "senseFast" | "deliberate"> = {
  senseFast: async (text) => runFastSensors(text),
  deliberate: async ({ round, workspace }) => {
    const claims = round === 0 ? workspace.claims : reviseClaims(workspace.claims);
    return { workspace: { ...workspace, claims }, consensus: computeConsensus(claims) };
  },
};

/**
 * Every stage in this process with the offline model: no NATS, no workers.
 * For unit tests of the turn machine and for in-process comparisons.
 */
export function localTurnServices(): TurnServices {
  const episodes = new Map<string, Episode[]>();
  const manifests = [...AGENTS.values()].map((agent) => agent.manifest);
  return {
    ...inProcessStages,
    retrieveMemory: async ({ session_id, limit }) => ({
      episodes: (episodes.get(session_id) ?? []).slice(-limit),
      user_facts: [],
      open_threads: [],
    }),
    planWaves: async ({ sensors, modulators }) => planWaves(manifests, sensors, modulators),
    callAgent: async (request) => {
      const agent = AGENTS.get(request.agent_id);
      if (!agent) throw Object.assign(new Error(`no agent ${request.agent_id}`), { code: "no_responders" });
      return { agent_id: request.agent_id, output: agent.rules(request.context), elapsed_ms: 0, worker: "local" };
    },
    decide: async ({ context }) => decide(context),
    safetyCouncil: async () => safetyCouncil(),
    renderVoice: async (request) => ({ text: renderOffline(request) }),
    runCritics: async (request) => ({ results: runCritics(request) }),
    commitMemory: async ({ episode }) => {
      const list = episodes.get(episode.session_id) ?? [];
      list.push(episode);
      episodes.set(episode.session_id, list);
      return { summary: `episode ${episode.turn_id} stored (${list.length} in session)`, stored: true };
    },
  };
}

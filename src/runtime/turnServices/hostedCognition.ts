import type { AgentDirectory } from "../../agents/directory.ts";
import type { CognitionBackend } from "../../cognition/backend.ts";
import { safetyCouncil } from "../../cognition/council.ts";
import { CRITIC_NAMES, collectVerdict } from "../../cognition/critics.ts";
import { planWaves } from "../../cognition/scheduler.ts";
import type { PlanWavesRequest } from "../../contracts/scheduler.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { CooldownStore } from "../cooldownStore.ts";
import type { CognitionActors } from "./cognitionActors.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/** What a runner needs to host the scheduler, the council (with the voice) and the critics itself. */
export interface HostedCognition {
  /** The model they think with: the worker's (`backendFromEnv`), offline or an LLM. */
  backend: CognitionBackend;
  /** Where the scheduler's cooldowns are kept (a store that remembers its sessions': no round trip). */
  cooldowns: Pick<CooldownStore, "load" | "save"> & Partial<Pick<CooldownStore, "flush">>;
  /** The live roster the scheduler plans from: the agents running workers announce. */
  directory: Promise<Pick<AgentDirectory, "roster">>;
  /** The critics every reply goes to. Default: the built-in ones. */
  critics?: readonly string[];
  log?: Logger;
  /**
   * The actors they run as (startCognitionActors, made with the same backend and cooldowns): each call
   * is an event to them, answered with an event. Absent: plain calls in this process.
   * @internal absent only in the bench's comparison (bench/cognitionActors.ts)
   */
  actors?: CognitionActors;
}

/**
 * The interceptor that answers the scheduler, council, voice and critics in
 * this process (the runner's) instead of passing them on to be asked over
 * NATS: four hops fewer per turn, and no request to encode, route and check
 * for each. Agents and memory go on (to workers). Each is an XState actor of
 * the runner (`hosted.actors`: a scheduler, council, critic or voice actor
 * spawned per call, seen by the inspector and the viewer), as on a worker.
 * What the actors compute is the same: the same backend, the same plan, the
 * same verdict and its fallbacks, and a taken-over turn still answers its
 * recorded steps from the log (the recording wraps these services).
 */
export function hostedCognitionInterceptor(hosted: HostedCognition): TurnInterceptor {
  const { backend, cooldowns, actors } = hosted;
  const critics = hosted.critics ?? CRITIC_NAMES;
  const plan: NonNullable<TurnInterceptor["planWaves"]> = actors
    ? async ({ request, signal }) => {
        const input = { request, manifests: (await hosted.directory).roster(), now: Date.now() };
        const { reply, notes } = await actors.plan(input, signal);
        // Cooldowns are soft state: unread, the plan ignored them; unsaved, it still goes out. As on a worker.
        for (const note of notes) hosted.log?.warn(`${request.session_id}: ${note}`);
        return reply;
      }
    : async ({ request }) => directPlan(hosted, request);
  return {
    planWaves: plan,
    decide: ({ request, signal }) => (actors ?? backend).decide(request, signal),
    safetyCouncil: async () => safetyCouncil(),
    renderVoice: ({ request, signal, onStream }) =>
      actors ? actors.render(request, onStream, signal) : backend.render(request, onStream, signal),
    runCritics: ({ request, signal }) =>
      collectVerdict(critics, request, (name) => (actors ?? backend).judge(name, request, signal)),
    // The plan's cooldowns are written alongside the memory commit: one round trip for both. The commit's
    // request goes out within this tick's promise jobs; the write right after them.
    commitMemory: (input, next) => {
      const committed = next(input);
      setImmediate(() => cooldowns.flush?.(input.request.episode.session_id));
      return committed;
    },
  };
}

/** The scheduler as a plain call (the bench's comparison): the same plan the scheduler machine makes. */
async function directPlan(hosted: HostedCognition, request: PlanWavesRequest) {
  const { cooldowns } = hosted;
  const manifests = (await hosted.directory).roster();
  const before = await cooldowns.load(request.session_id).catch((error: unknown) => {
    hosted.log?.warn(`cooldowns of ${request.session_id} not loaded: ${String(error)}`);
    return {};
  });
  const { cooldowns: next, ...plan } = planWaves(manifests, {
    sensors: request.sensors,
    modulators: request.modulators,
    tokenBudget: request.token_budget,
    cooldowns: before,
    now: Date.now(),
  });
  await cooldowns.save(request.session_id, next).catch((error: unknown) => {
    hosted.log?.warn(`cooldowns of ${request.session_id} not saved: ${String(error)}`);
  });
  return plan;
}

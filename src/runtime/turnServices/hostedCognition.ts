import type { AgentDirectory } from "../../agents/directory.ts";
import type { CognitionBackend } from "../../cognition/backend.ts";
import { safetyCouncil } from "../../cognition/council.ts";
import { CRITIC_NAMES, collectVerdict } from "../../cognition/critics.ts";
import { planWaves } from "../../cognition/scheduler.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { CooldownStore } from "../cooldownStore.ts";
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
}

/**
 * The interceptor that answers the scheduler, council, voice and critics in
 * this process (the runner's) instead of passing them on to be asked over
 * NATS: four hops fewer per turn, and no request to encode, route and check
 * for each. Agents and memory go on (to workers). What the actors compute is the
 * same: the same backend, the same plan, the same verdict and its fallbacks,
 * and a taken-over turn still answers its recorded steps from the log (the
 * recording wraps these services).
 */
export function hostedCognitionInterceptor(hosted: HostedCognition): TurnInterceptor {
  const { backend, cooldowns } = hosted;
  const critics = hosted.critics ?? CRITIC_NAMES;
  return {
    planWaves: async ({ request }) => {
      const manifests = (await hosted.directory).roster();
      // Cooldowns are soft state: unreadable, the plan ignores them; as the worker's scheduler does.
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
    },
    decide: ({ request, signal }) => backend.decide(request, signal),
    safetyCouncil: async () => safetyCouncil(),
    renderVoice: ({ request, signal, onStream }) => backend.render(request, onStream, signal),
    runCritics: ({ request, signal }) =>
      collectVerdict(critics, request, (name) => backend.judge(name, request, signal)),
    // The plan's cooldowns are written alongside the memory commit: one round trip for both. The commit's
    // request goes out within this tick's promise jobs; the write right after them.
    commitMemory: (input, next) => {
      const committed = next(input);
      setImmediate(() => cooldowns.flush?.(input.request.episode.session_id));
      return committed;
    },
  };
}

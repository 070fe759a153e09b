import { fromCallback, fromPromise } from "xstate";
import { type RunWaveInput, type TurnRecord, turnMachine, type WaveEvent } from "../../machines/turn.ts";
import type { ErrorCode } from "../contracts/errors.ts";
import type { TurnServices } from "./turnServices.ts";

const errorCode = (error: unknown): ErrorCode => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? (code as ErrorCode) : "agent_failed";
};

/** One agent request per agent of the wave, all at once; each answer is sent back as it arrives. */
const runWave = (services: TurnServices) =>
  fromCallback<{ type: "noop" }, RunWaveInput>(({ input, sendBack }) => {
    const abort = new AbortController();
    let open = input.agents.length;
    const settle = (event: WaveEvent) => {
      if (abort.signal.aborted) return;
      sendBack(event);
      open -= 1;
      if (open === 0) sendBack({ type: "wave.done" });
    };
    for (const agentId of input.agents) {
      services
        .callAgent(
          {
            session_id: input.session_id,
            turn_id: input.turn_id,
            agent_id: agentId,
            wave: input.wave,
            timeout_ms: input.timeout_ms,
            context: input.context,
          },
          abort.signal,
        )
        .then(
          (reply) => settle({ type: "agent.replied", reply }),
          (error: unknown) =>
            settle({
              type: "agent.failed",
              agent_id: agentId,
              code: errorCode(error),
              message: error instanceof Error ? error.message : String(error),
            }),
        );
    }
    if (open === 0) sendBack({ type: "wave.done" });
    return () => abort.abort();
  });

/**
 * The turn machine with its work done by `services` and its events recorded
 * by `record`: what a session invokes for each turn.
 */
export function provideTurn(
  services: TurnServices,
  record: (context: { session_id: string; turn_id: number }, event: TurnRecord) => void,
) {
  return turnMachine.provide({
    actors: {
      senseFast: fromPromise(({ input }) => services.senseFast(input.text)),
      safetyCouncil: fromPromise(({ input, signal }) => services.safetyCouncil(input, signal)),
      retrieveMemory: fromPromise(({ input, signal }) => services.retrieveMemory(input, signal)),
      planWaves: fromPromise(({ input, signal }) => services.planWaves(input, signal)),
      runWave: runWave(services),
      deliberate: fromPromise(({ input, signal }) => services.deliberate(input, signal)),
      decide: fromPromise(({ input, signal }) => services.decide(input, signal)),
      renderVoice: fromPromise(({ input, signal }) => services.renderVoice(input, signal)),
      runCritics: fromPromise(({ input, signal }) => services.runCritics(input, signal)),
      commitMemory: fromPromise(({ input, signal }) => services.commitMemory(input, signal)),
    },
    actions: {
      record: ({ context }, event) => record(context, event),
    },
  });
}

import { createActor, fromPromise, type InspectionEvent, type Observer } from "xstate";
import { type CognitionCall, cognitionMachine } from "../../../machines/cognition.ts";
import { type CouncilOutput, councilMachine } from "../../../machines/council.ts";
import { type CriticOutput, criticMachine } from "../../../machines/critic.ts";
import { type SchedulerInput, type SchedulerOutput, schedulerMachine } from "../../../machines/scheduler.ts";
import type { CognitionBackend } from "../../cognition/backend.ts";
import type { VoiceStreamPart } from "../../cognition/voice.ts";
import type { CouncilReply, CouncilRequest, VoiceReply, VoiceRequest } from "../../contracts/council.ts";
import type { CriticReply, CriticRequest } from "../../contracts/critic.ts";
import { ConclaveError } from "../../errors.ts";
import type { CooldownStore } from "../cooldownStore.ts";

/** What the cognition actors are given: the model they think with and where the cooldowns are kept. */
export interface CognitionActorsDeps {
  backend: CognitionBackend;
  cooldowns: Pick<CooldownStore, "load" | "save">;
  /** Receives the inspection events of the cognition actor and every child it spawns. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
}

/**
 * The scheduler, council, voice and critics as actors of this process: each
 * call is an event sent to one long-lived cognition actor (machines/cognition.ts),
 * which spawns a scheduler, council, critic or voice actor for it and answers
 * with an event when that actor is done. A call's signal stops its actor.
 */
export interface CognitionActors {
  plan(input: SchedulerInput, signal: AbortSignal): Promise<SchedulerOutput>;
  decide(request: CouncilRequest, signal: AbortSignal): Promise<CouncilReply>;
  judge(critic: string, request: CriticRequest, signal: AbortSignal): Promise<CriticReply>;
  render(request: VoiceRequest, onStream: (part: VoiceStreamPart) => void, signal: AbortSignal): Promise<VoiceReply>;
  /** Stops the cognition actor and its children; calls under way are rejected. */
  stop(): void;
}

/** Raised for a call made after the cognition actors were stopped, or under way when they were. */
export class CognitionStoppedError extends ConclaveError<"unavailable"> {
  constructor() {
    super("unavailable", "the runner's cognition actors are stopped");
  }
}

/**
 * Starts the cognition actor with the children's work provided from `deps`
 * (as a worker provides it to the same machines), inspected with `deps.inspect`.
 */
export function startCognitionActors(deps: CognitionActorsDeps): CognitionActors {
  const { backend, cooldowns } = deps;
  // What a council's or critic's work threw, by its request: the machines keep only its text, the turn wants its code.
  const thrown = new WeakMap<object, Map<string, unknown>>();
  const remember = (request: object, key: string, error: unknown) => {
    const errors = thrown.get(request) ?? new Map<string, unknown>();
    errors.set(key, error);
    thrown.set(request, errors);
  };
  const recalled = (request: object, key: string, text: string | undefined): unknown =>
    thrown.get(request)?.get(key) ?? new Error(text ?? "unknown");
  // Where each rendering's stream parts go, by its request.
  const streams = new WeakMap<VoiceRequest, (part: VoiceStreamPart) => void>();
  const logic = cognitionMachine.provide({
    actors: {
      scheduler: schedulerMachine.provide({
        actors: {
          loadCooldowns: fromPromise(({ input }) => cooldowns.load(input.session_id)),
          saveCooldowns: fromPromise(({ input }) => cooldowns.save(input.session_id, input.cooldowns)),
        },
      }),
      council: councilMachine.provide({
        actors: {
          decide: fromPromise(({ input, signal }) =>
            backend.decide(input, signal).catch((error: unknown) => {
              remember(input, "council", error);
              throw error;
            }),
          ),
        },
      }),
      critic: criticMachine.provide({
        actors: {
          judge: fromPromise(({ input, signal }) =>
            backend.judge(input.critic, input.request, signal).catch((error: unknown) => {
              remember(input.request, input.critic, error);
              throw error;
            }),
          ),
        },
      }),
      voice: fromPromise<VoiceReply, VoiceRequest>(({ input, signal }) =>
        backend.render(input, (part) => streams.get(input)?.(part), signal),
      ),
    },
  });
  const host = createActor(logic, deps.inspect ? { inspect: deps.inspect } : {});
  const pending = new Map<string, { resolve: (output: unknown) => void; reject: (error: unknown) => void }>();
  host.on("answered", ({ call, output }) => pending.get(call)?.resolve(output));
  host.on("failed", ({ call, error }) => pending.get(call)?.reject(error));
  host.start();
  let calls = 0;
  let stopped = false;

  const ask = <T>(type: CognitionCall["type"], input: CognitionCall["input"], signal: AbortSignal): Promise<T> => {
    if (stopped) return Promise.reject(new CognitionStoppedError());
    if (signal.aborted) return Promise.reject(signal.reason);
    const call = `${type}:${++calls}`;
    return new Promise<T>((resolve, reject) => {
      const settle = () => {
        pending.delete(call);
        signal.removeEventListener("abort", abort);
      };
      const abort = () => {
        settle();
        host.send({ type: "cancel", call });
        reject(signal.reason);
      };
      pending.set(call, {
        resolve: (output) => {
          settle();
          resolve(output as T);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      signal.addEventListener("abort", abort, { once: true });
      host.send({ type, call, input } as CognitionCall);
    });
  };

  return {
    plan: (input, signal) => ask<SchedulerOutput>("plan", input, signal),
    decide: async (request, signal) => {
      const output = await ask<CouncilOutput>("decide", request, signal);
      if (output.status === "failed" || !output.reply) throw recalled(request, "council", output.error);
      return output.reply;
    },
    judge: async (critic, request, signal) => {
      const output = await ask<CriticOutput>("judge", { critic, request }, signal);
      if (output.status === "errored" || !output.reply) throw recalled(request, critic, output.error);
      return output.reply;
    },
    render: async (request, onStream, signal) => {
      streams.set(request, onStream);
      try {
        return await ask<VoiceReply>("render", request, signal);
      } finally {
        streams.delete(request);
      }
    },
    stop: () => {
      stopped = true;
      host.stop();
      for (const { reject } of [...pending.values()]) reject(new CognitionStoppedError());
    },
  };
}

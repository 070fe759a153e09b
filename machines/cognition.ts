import { type DoneActorEvent, type ErrorActorEvent, emit, fromPromise, setup, spawnChild, stopChild } from "xstate";
import type { CouncilRequest, VoiceReply, VoiceRequest } from "../src/contracts/council.ts";
import { councilMachine } from "./council.ts";
import { type CriticInput, criticMachine } from "./critic.ts";
import { MissingActorError } from "./errors.ts";
import { type SchedulerInput, schedulerMachine } from "./scheduler.ts";

/**
 * The scheduler, council, voice and critics of a process that hosts them
 * itself (a runner with `--cognition runner`): one long-lived actor that,
 * for each call it is sent, spawns the callee as a child actor of its own
 * system (a scheduler, council or critic machine, or the voice) and answers
 * with an event when that child is done:
 *
 *   plan | decide | render | judge   → spawns the child, named by the call's id
 *   xstate.done.actor.<call>         → emits `answered` { call, output }, lets the child go
 *   xstate.error.actor.<call>        → emits `failed` { call, error }, lets the child go
 *   cancel                           → stops the call's child (its work's signal aborts)
 *
 * The children's work (`decide`, `judge`, the cooldowns, `voice`) is provided
 * by the host with `machine.provide`, as a worker provides it.
 */
export type CognitionCall =
  | { type: "plan"; call: string; input: SchedulerInput }
  | { type: "decide"; call: string; input: CouncilRequest }
  | { type: "judge"; call: string; input: CriticInput }
  | { type: "render"; call: string; input: VoiceRequest };

/** What the host of the cognition actor is told, by call id. */
export type CognitionAnswer =
  | { type: "answered"; call: string; output: unknown }
  | { type: "failed"; call: string; error: unknown };

type CognitionEvent = CognitionCall | { type: "cancel"; call: string } | DoneActorEvent | ErrorActorEvent;

/** A call's event of `type` (spawnChild's input mapper is not given the narrowed type). */
type Call<T extends CognitionCall["type"]> = Extract<CognitionCall, { type: T }>;

export const cognitionMachine = setup({
  types: {
    events: {} as CognitionEvent,
    emitted: {} as CognitionAnswer,
  },
  actors: {
    scheduler: schedulerMachine,
    council: councilMachine,
    critic: criticMachine,
    voice: fromPromise<VoiceReply, VoiceRequest>(async () => {
      throw new MissingActorError("voice", "cognition", "runner");
    }),
  },
}).createMachine({
  id: "cognition",
  initial: "serving",
  states: {
    serving: {
      on: {
        plan: {
          actions: spawnChild("scheduler", {
            id: ({ event }) => event.call,
            input: ({ event }) => (event as Call<"plan">).input,
          }),
        },
        decide: {
          actions: spawnChild("council", {
            id: ({ event }) => event.call,
            input: ({ event }) => (event as Call<"decide">).input,
          }),
        },
        judge: {
          actions: spawnChild("critic", {
            id: ({ event }) => event.call,
            input: ({ event }) => (event as Call<"judge">).input,
          }),
        },
        render: {
          actions: spawnChild("voice", {
            id: ({ event }) => event.call,
            input: ({ event }) => (event as Call<"render">).input,
          }),
        },
        cancel: { actions: stopChild(({ event }) => event.call) },
        "xstate.done.actor.*": {
          actions: [
            emit(({ event }) => {
              const done = event as DoneActorEvent;
              return { type: "answered" as const, call: done.actorId, output: done.output };
            }),
            stopChild(({ event }) => (event as DoneActorEvent).actorId),
          ],
        },
        "xstate.error.actor.*": {
          actions: [
            emit(({ event }) => {
              const failed = event as ErrorActorEvent;
              return { type: "failed" as const, call: failed.actorId, error: failed.error };
            }),
            stopChild(({ event }) => (event as ErrorActorEvent).actorId),
          ],
        },
      },
    },
  },
});

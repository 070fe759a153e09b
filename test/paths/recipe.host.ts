import { type AnyEventObject, createActor, sendTo, setup } from "xstate";
import { writer } from "../../agents/recipes/content.writer.ts";
import type { RecipeStart, RecipeTurnEvent, RecipeTurnInput } from "../../machines/session.ts";
import { BlackboardStores } from "../../src/blackboard/open.ts";
import {
  type BlackboardBackend,
  type BlackboardStore,
  checkSessionId,
  decodeBlackboard,
  encodeBlackboard,
} from "../../src/blackboard/store.ts";
import { SEED_SENSORS } from "../../src/cognition/sensors.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { screeningInterceptor } from "../../src/runtime/interception/intercepted.ts";
import { defaultInterceptors } from "../../src/runtime/interception/interceptors.ts";
import { type RecordTurn, recipeTurnLogic } from "../../src/runtime/recipeHost/recipeTurn.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { composeTurnServices } from "../../src/runtime/turnServices/turnInterceptor.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import { Gates } from "./harness.ts";
import { NOW } from "./machines.model.ts";

/**
 * Recipe turns of the session under model-based test, hosted the way a runner
 * hosts them (`recipeTurnLogic`): the recipe's agent answers in this process
 * (`localTurnServices` with the shipped `content.writer`, behind the runner's
 * interceptor chains), blackboards are kept by an in-memory store with the
 * stores' interface, and the run's log is written by a `record` hook.
 */

const inputs = { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] };

/** A graph of one agent node: the run ends, Complete, once the writer has answered. */
export const DRAFT_RECIPE: JsonObject = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "paths-draft", description: "One draft by the writer." },
  interface: { inputs },
  topology: {
    entry_point: "draft",
    nodes: [
      { type: "agent", id: "draft", agent_ref: "content.writer", inputs_map: { topic: "topic" }, output_key: "draft" },
    ],
    edges: [],
  },
};

/** A workflow whose human node has no answer yet: the run suspends there once the writer has answered. */
export const APPROVAL_RECIPE: JsonObject = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "paths-approval", description: "A draft waits for an editor." },
  interface: { inputs },
  workflow: {
    start: "draft",
    steps: {
      draft: { type: "agent", agent: "content.writer", inputs: { topic: "topic" }, next: "approve" },
      approve: { type: "human", prompt: "Publish this draft?", required_role: "editor" },
    },
  },
};

export const recipeStart = (document: JsonObject, topic: string): RecipeStart => ({
  document,
  inputs: { topic },
  started: false,
});

/**
 * The blackboard stores of a runner, kept in memory: `get` gives a store with the
 * `BlackboardStore` interface (JSON objects, checked and encoded as every backend does).
 */
export class MemoryBlackboards extends BlackboardStores {
  readonly #boards = new Map<string, string>();

  constructor() {
    super({});
  }

  override get(backend: BlackboardBackend): Promise<BlackboardStore> {
    const boards = this.#boards;
    return Promise.resolve({
      backend,
      load: async (sessionId) => {
        const text = boards.get(checkSessionId(backend, sessionId));
        return text === undefined ? null : decodeBlackboard(backend, sessionId, text);
      },
      save: async (sessionId, blackboard) => {
        boards.set(checkSessionId(backend, sessionId), encodeBlackboard(backend, sessionId, blackboard));
      },
      close: async () => {},
    });
  }
}

/** The services recipe runs call agents (and screen their inputs) through: in this process, behind the runner's default chains. */
export const recipeServices = (): TurnServices =>
  composeTurnServices(
    localTurnServices(() => NOW, SEED_SENSORS, [writer]),
    [screeningInterceptor(defaultInterceptors())],
  );

/** The agents of recipe turns held at their gate (`callAgent:<turn>`) until the replay lets them answer. */
export function agentsHeld(services: TurnServices, gates: Gates): TurnServices {
  return {
    ...services,
    callAgent: (request, signal, options) =>
      gates.hold(`callAgent:${request.turn_id}`, request, () => services.callAgent(request, signal, options), signal),
  };
}

/** A run's log as a writer keeps it: each record stored with its seq, contiguous from 0 within the turn. */
export class TurnLog {
  readonly turns = new Map<number, EngineEvent[]>();

  readonly append: RecordTurn = (turn, record: TurnRecord) => {
    const events = this.turns.get(turn.turn_id) ?? [];
    const event = {
      session_id: turn.session_id,
      turn_id: turn.turn_id,
      seq: events.length,
      ts_monotonic: NOW,
      kind: record.kind,
      payload: record.payload,
    } as EngineEvent;
    events.push(event);
    this.turns.set(turn.turn_id, events);
    return event;
  };

  of(turnId: number): EngineEvent[] {
    return this.turns.get(turnId) ?? [];
  }
}

/** The `recipeTurn` actor as a runner provides it, on these services and this log. */
export const recipeTurn = (services: TurnServices, record: RecordTurn) =>
  recipeTurnLogic({ services, stores: new MemoryBlackboards(), logicHandlers: {}, nodeTimeoutMs: 60_000, record });

/**
 * What a real recipe turn sends back to its session: the turn run on its own (a
 * fresh host), in a parent that takes its first event. With `stop`, the turn is
 * told to stop (interrupt, cancel) as soon as it waits for its agent, where the
 * replay holds it.
 */
export function runRecipeTurn(input: RecipeTurnInput, stop?: AnyEventObject): Promise<RecipeTurnEvent> {
  const gates = new Gates();
  if (!stop) gates.auto = () => "real";
  const logic = recipeTurn(agentsHeld(recipeServices(), gates), new TurnLog().append);
  let actor: { stop(): void } | undefined;
  return new Promise<RecipeTurnEvent>((resolve, reject) => {
    const parent = setup({
      types: { events: {} as RecipeTurnEvent | { type: "stop"; event: AnyEventObject } },
      actors: { recipeTurn: logic },
    }).createMachine({
      invoke: { id: "turn", src: "recipeTurn", input },
      on: {
        stop: { actions: sendTo("turn", ({ event }) => event.event as never) },
        "recipe.finished": { actions: ({ event }) => resolve(event) },
        "recipe.crashed": { actions: ({ event }) => resolve(event) },
      },
    });
    const running = createActor(parent);
    actor = running;
    running.subscribe({ error: reject });
    running.start();
    if (!stop) return;
    const stopWhenHeld = () => {
      if (gates.pendingChannels().length > 0) running.send({ type: "stop", event: stop });
      else setImmediate(stopWhenHeld);
    };
    stopWhenHeld();
  }).finally(() => actor?.stop());
}

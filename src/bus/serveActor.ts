import {
  type AnyActorLogic,
  createActor,
  type EventObject,
  type InputFrom,
  type InspectionEvent,
  type Observer,
  type OutputFrom,
  toPromise,
} from "xstate";
import type { z } from "zod";
import { withDeadline } from "../deadline.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import { encodeJson } from "./codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "./errors.ts";
import { failActiveSpan, serveInSpan } from "./serverSpans.ts";
import type { ServiceGroup, ServiceMsg } from "./service.ts";
import type { StepReplies } from "./stepReplies.ts";
import { decodeMessage } from "./wire.ts";

/** Where a request's call learns that its turn is over: `TurnCancellations`, or a worker's `TurnAborts`. */
export interface TurnWatch {
  /**
   * Calls `stop` when the turn is cancelled (or over) while the call runs; returns the unwatch. `call.step`:
   * the call is a step (`stepKey`) a runner that takes the turn over joins, so a takeover does not stop it.
   */
  watch(sessionId: string, turnId: number, stop: (reason: string) => void, call?: { step: boolean }): () => void;
}

/**
 * The bridge: puts an actor behind a NATS subject. Each request creates one
 * actor from `logic` with the validated request as its input, runs it to its
 * final state, and answers with `reply(output)`. The actor never learns it is
 * being called over the network; the caller never learns it is an actor.
 */
export interface ActorEndpoint<S extends z.ZodType, L extends AnyActorLogic> {
  /** Endpoint name, a single subject token (shown by the services ping/info/stats). */
  name: string;
  subject: string;
  request: S;
  logic: L;
  /** The actor's input from the request (default: the request itself), e.g. to add what the host knows. */
  input?: (request: z.infer<S>) => InputFrom<L>;
  /** Sent to the actor right after it starts, for machines that wait for a go. */
  begin?: EventObject;
  /** Maps the actor's output to the reply; throw a HandlerError to answer with an error reply. */
  reply: (output: OutputFrom<L>, request: z.infer<S>, timing: { elapsedMs: number }) => unknown;
  /**
   * Streaming endpoints: every event the actor emits is sent at once as a
   * reply of its own (mapped by this function), then the final reply, then an
   * empty message that closes the exchange (for `requestMany` with the
   * `sentinel` strategy).
   */
  stream?: (emitted: EventObject) => unknown;
  /**
   * The request's step identity, when asking it again must not do the work again (a takeover
   * repeats the steps that were under way): with `ServeOptions.steps`, a repeat joins the call
   * under way or gets its answer. Undefined: every request runs. Not for streaming endpoints.
   */
  stepKey?: (request: z.infer<S>) => string | undefined;
  /** A hard stop for actors without a deadline of their own. Default: 30 s. */
  timeoutMs?: (request: z.infer<S>) => number;
  metadata?: Record<string, string>;
}

export interface ServeOptions {
  /**
   * Cancelled turns: a request naming a `session_id` and `turn_id` whose turn
   * is cancelled while its actor runs has the actor stopped (its work's
   * AbortSignal fires) and is answered with a `cancelled` error.
   */
  cancellations?: TurnWatch;
  /** Receives the inspection events of every actor this endpoint creates. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** Answers by step, for endpoints with a `stepKey`. Default: none (every request runs). */
  steps?: StepReplies;
  /** Told about every error reply sent, with the request that caused it: to log it, or keep bad input. */
  onError?: (endpoint: string, error: HandlerError, request: { subject: string; data: Uint8Array }) => void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export function serveActor<S extends z.ZodType, L extends AnyActorLogic>(
  group: ServiceGroup,
  endpoint: ActorEndpoint<S, L>,
  options: ServeOptions = {},
): void {
  serveWith(group, endpoint, options, endpoint.stream !== undefined, (request, msg) =>
    runActor(endpoint, msg, request, options),
  );
}

/**
 * A stateless endpoint: one function call per request, no actor (nothing of
 * it to watch in the inspector, nothing to allocate but the call). Its reply
 * is sent as returned, unchecked: our own code built it, typed.
 */
export interface FunctionEndpoint<S extends z.ZodType, R> {
  /** Endpoint name, a single subject token (shown by the services ping/info/stats). */
  name: string;
  subject: string;
  request: S;
  /** The work; its signal aborts when the turn is cancelled or the deadline passes. */
  handle: (request: z.infer<S>, signal: AbortSignal) => Promise<R>;
  /** As `ActorEndpoint.stepKey`. */
  stepKey?: (request: z.infer<S>) => string | undefined;
  /** A hard stop. Default: 30 s. */
  timeoutMs?: (request: z.infer<S>) => number;
  metadata?: Record<string, string>;
}

/** Puts a function behind a NATS subject: the stateless sibling of `serveActor`, with the same errors, steps and cancellation. */
export function serveFunction<S extends z.ZodType, R>(
  group: ServiceGroup,
  endpoint: FunctionEndpoint<S, R>,
  options: ServeOptions = {},
): void {
  serveWith(group, endpoint, options, false, (request) =>
    underDeadline(endpoint, request, options, async (signal) => encodeJson(await endpoint.handle(request, signal))),
  );
}

/** What both kinds of endpoint share: the subject, the request's schema, its step and its name. */
interface Served<S extends z.ZodType> {
  name: string;
  subject: string;
  request: S;
  stepKey?: (request: z.infer<S>) => string | undefined;
  timeoutMs?: (request: z.infer<S>) => number;
  metadata?: Record<string, string>;
}

function serveWith<S extends z.ZodType>(
  group: ServiceGroup,
  endpoint: Served<S>,
  options: ServeOptions,
  stream: boolean,
  run: (request: z.infer<S>, msg: ServiceMsg) => Promise<Uint8Array>,
): void {
  group.addEndpoint(endpoint.name, {
    subject: endpoint.subject,
    ...(endpoint.metadata ? { metadata: endpoint.metadata } : {}),
    // Callbacks must not be async: the work runs detached and always answers.
    handler: (msg) => {
      const answering = () => answer(endpoint, msg, options, stream, run);
      // Traced, the request is handled in a server span, the child of the requester's (its context is in the headers).
      void (tracingActive() ? serveInSpan(msg, answering) : answering());
    },
  });
}

async function answer<S extends z.ZodType>(
  endpoint: Served<S>,
  msg: ServiceMsg,
  options: ServeOptions,
  stream: boolean,
  run: (request: z.infer<S>, msg: ServiceMsg) => Promise<Uint8Array>,
): Promise<void> {
  try {
    const request = decodeMessage(msg, endpoint.request, `request on ${msg.subject}`);
    const key = stream ? undefined : endpoint.stepKey?.(request);
    const work = () => run(request, msg);
    // A repeat waits on another worker running the step no longer than the step itself may take.
    const waitMs = endpoint.timeoutMs?.(request) ?? DEFAULT_TIMEOUT_MS;
    safeRespond(msg, await (key !== undefined && options.steps ? options.steps.reply(key, work, waitMs) : work()));
    if (stream) safeRespond(msg, new Uint8Array());
  } catch (error) {
    const failure = asHandlerError(error, `${endpoint.name} failed`);
    failActiveSpan(failure);
    try {
      options.onError?.(endpoint.name, failure, { subject: msg.subject, data: msg.data });
    } catch {
      // A broken error listener must not take the endpoint down.
    }
    if (msg.reply) {
      respondWithError(msg, failure);
      if (stream) safeRespond(msg, new Uint8Array());
    }
  }
}

/**
 * Runs `work` with a signal that aborts when the request's turn is cancelled (answered with a `cancelled`
 * error) or its deadline passes (a `timeout` error); `onCancel` is told of a cancellation first.
 */
async function underDeadline<S extends z.ZodType, T>(
  endpoint: Pick<Served<S>, "name" | "timeoutMs" | "stepKey"> & { stream?: unknown },
  request: z.infer<S>,
  options: ServeOptions,
  work: (signal: AbortSignal) => Promise<T>,
  onCancel?: () => void,
): Promise<T> {
  const timeoutMs = endpoint.timeoutMs?.(request) ?? DEFAULT_TIMEOUT_MS;
  const cancel = new AbortController();
  const turn = turnOf(request);
  // As `answer` decides: a step when it has a key, steps are kept, and it does not stream.
  const step = !endpoint.stream && options.steps !== undefined && endpoint.stepKey?.(request) !== undefined;
  const unwatch =
    turn && options.cancellations
      ? options.cancellations.watch(
          turn.session_id,
          turn.turn_id,
          (reason) => {
            cancel.abort(
              new HandlerError("cancelled", `turn ${turn.session_id}/${turn.turn_id} was cancelled: ${reason}`),
            );
            onCancel?.();
          },
          { step },
        )
      : () => {};
  try {
    return await withDeadline(
      timeoutMs,
      (signal) => work(signal),
      () => new HandlerError("timeout", `${endpoint.name} did not finish within ${timeoutMs} ms`),
      { signal: cancel.signal },
    );
  } finally {
    unwatch();
  }
}

/** Runs one actor for a request to its end; its reply, encoded (a streaming actor's emitted events go out meanwhile). */
async function runActor<S extends z.ZodType, L extends AnyActorLogic>(
  endpoint: ActorEndpoint<S, L>,
  msg: ServiceMsg,
  request: z.infer<S>,
  options: ServeOptions,
): Promise<Uint8Array> {
  const started = performance.now();
  // Generic over any logic, so the options cannot be checked against L here.
  const actor = createActor(endpoint.logic as AnyActorLogic, {
    input: endpoint.input ? endpoint.input(request) : request,
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  if (endpoint.stream) {
    const toMessage = endpoint.stream;
    actor.on("*", (emitted) => safeRespond(msg, encodeJson(toMessage(emitted))));
  }
  actor.start();
  if (endpoint.begin) actor.send(endpoint.begin);
  try {
    // A cancelled turn ends the call as its deadline does, with its own error, and stops the actor.
    const output = await underDeadline(
      endpoint,
      request,
      options,
      () => toPromise(actor),
      () => actor.stop(),
    );
    const elapsedMs = Math.round((performance.now() - started) * 1000) / 1000;
    return encodeJson(endpoint.reply(output as OutputFrom<L>, request, { elapsedMs }));
  } finally {
    actor.stop();
  }
}

/** The turn a request belongs to, when it names one. */
function turnOf(request: unknown): { session_id: string; turn_id: number } | null {
  if (typeof request !== "object" || request === null) return null;
  const { session_id, turn_id } = request as Record<string, unknown>;
  return typeof session_id === "string" && typeof turn_id === "number" ? { session_id, turn_id } : null;
}

/** A reply that cannot be sent (requester gone, connection closed) is dropped, never thrown into the handler. */
function safeRespond(msg: ServiceMsg, data: Uint8Array): void {
  try {
    msg.respond(data);
  } catch {
    // Nothing to tell: the requester times out as it would had the reply been lost on the wire.
  }
}

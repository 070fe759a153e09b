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
import { failActiveSpan, serveInSpan } from "../telemetry/serverSpans.ts";
import { tracingActive } from "../telemetry/tracer.ts";
import { decodeJson, encodeJson } from "./codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "./errors.ts";
import type { ServiceGroup, ServiceMsg } from "./service.ts";
import type { StepReplies } from "./stepReplies.ts";
import type { TurnCancellations } from "./turnCancellations.ts";

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
  cancellations?: Pick<TurnCancellations, "watch">;
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
  group.addEndpoint(endpoint.name, {
    subject: endpoint.subject,
    ...(endpoint.metadata ? { metadata: endpoint.metadata } : {}),
    // Callbacks must not be async: the work runs detached and always answers.
    handler: (msg) => {
      // Traced, the request is handled in a server span, the child of the requester's (its context is in the headers).
      void (tracingActive() ? serveInSpan(msg, () => answer(endpoint, msg, options)) : answer(endpoint, msg, options));
    },
  });
}

async function answer<S extends z.ZodType, L extends AnyActorLogic>(
  endpoint: ActorEndpoint<S, L>,
  msg: ServiceMsg,
  options: ServeOptions,
): Promise<void> {
  try {
    const request = decodeJson(msg.data, endpoint.request, `request on ${msg.subject}`);
    const key = endpoint.stream ? undefined : endpoint.stepKey?.(request);
    const run = () => runActor(endpoint, msg, request, options);
    safeRespond(msg, await (key !== undefined && options.steps ? options.steps.reply(key, run) : run()));
    if (endpoint.stream) safeRespond(msg, new Uint8Array());
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
      if (endpoint.stream) safeRespond(msg, new Uint8Array());
    }
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
  const timeoutMs = endpoint.timeoutMs?.(request) ?? DEFAULT_TIMEOUT_MS;
  if (endpoint.stream) {
    const toMessage = endpoint.stream;
    actor.on("*", (emitted) => safeRespond(msg, encodeJson(toMessage(emitted))));
  }
  // A cancelled turn ends the call as its deadline does, with its own error.
  const cancel = new AbortController();
  let unwatch = () => {};
  const turn = turnOf(request);
  if (turn && options.cancellations) {
    unwatch = options.cancellations.watch(turn.session_id, turn.turn_id, (reason) => {
      cancel.abort(new HandlerError("cancelled", `turn ${turn.session_id}/${turn.turn_id} was cancelled: ${reason}`));
      actor.stop();
    });
  }
  actor.start();
  if (endpoint.begin) actor.send(endpoint.begin);
  try {
    const output = await withDeadline(
      timeoutMs,
      () => toPromise(actor),
      () => new HandlerError("timeout", `${endpoint.name} did not finish within ${timeoutMs} ms`),
      { signal: cancel.signal },
    );
    const elapsedMs = Math.round((performance.now() - started) * 1000) / 1000;
    return encodeJson(endpoint.reply(output as OutputFrom<L>, request, { elapsedMs }));
  } finally {
    unwatch();
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

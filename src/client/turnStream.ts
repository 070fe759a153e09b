import type { NatsConnection } from "@nats-io/nats-core";
import type { EngineEvent } from "../contracts/events.ts";
import { checkSessionId } from "../contracts/ids.ts";
import type { PipelineChoice } from "../contracts/pipeline.ts";
import type { TurnAck, TurnOutcome } from "../contracts/turn.ts";
import type { TurnUsage } from "../contracts/usage.ts";
import { isConclaveError } from "../errors.ts";
import { throughElections } from "../nats/elections.ts";
import { submitTurn, TurnFailedError, watchTurn } from "./turns.ts";

/** How to submit a turn. */
export interface SubmitOptions {
  /** Aborting it cancels the turn across processes: it ends `Cancelled`. */
  signal?: AbortSignal;
  /**
   * Resubmitting with the same key returns the first submission's turn and runs nothing. With a key,
   * `submit` also retries a submission the runtime could not confirm (below): give one for a turn that
   * must be stored exactly once across a NATS election. Default: none (one attempt; the reservation a
   * key costs is two more round trips before the ack).
   */
  idempotencyKey?: string;
  /**
   * With an `idempotencyKey`: how long to keep submitting while the runtime cannot confirm the turn (a
   * NATS cluster electing a leader answers `unavailable`, or the submission times out), with the same
   * key. Default 30 000; 0: one attempt. A refusal (`busy`, `invalid_request`, no runner at all) is
   * never retried.
   */
  submitPatienceMs?: number;
  /** Who is speaking (stored with the turn). */
  userId?: string;
  /**
   * The pipeline this turn and the session's later ones run, stored with the session:
   * `{ kind: "cognitive" }` (the built-in one), `{ kind: "agents" }` (only your own agents; one
   * agent's answer is the reply), `{ kind: "agents", council: true }` (the council and voice over
   * them) or `{ kind: "recipe", document }` (the recipe runs each turn, the message as its input
   * `message`). Default: the one the session chose before, else the runner's (docs/agents.md).
   */
  pipeline?: PipelineChoice;
  /** When the session already has a turn pending or running: `enqueue` (default), `reject` (busy error) or `interrupt`. */
  onBusy?: "enqueue" | "reject" | "interrupt";
  /**
   * Patience for the whole turn, in ms. Default 60 000: then `result` rejects with TurnTimeoutError.
   * Sent with the submission (`patience_ms`): a runtime that expects to finish the turn later refuses it
   * `busy`, with a retry-after hint, rather than running it for nobody.
   */
  timeoutMs?: number;
}

/** How a turn ended. */
export interface TurnResult {
  sessionId: string;
  turnId: number;
  /** Complete, PartialSuccess (with warnings) or Cancelled; a Failed turn rejects `result` instead. */
  outcome: TurnOutcome;
  /** What was said to the user. */
  response: string;
  /** Tokens used, in total and per actor. */
  usage: TurnUsage;
  totalTimeMs: number;
}

/**
 * A submitted turn: iterate it for its events as they happen (stored ones
 * first, so starting late misses nothing; the iteration ends after
 * TURN_COMPLETED), or await `result`. Stream chunks come one by one as they
 * are made, though the log stores them coalesced: each piece of text comes
 * once, live or from the log, and several live chunks share the `seq` of the
 * stored STREAM_CHUNK that holds them.
 */
export interface TurnStream extends AsyncIterable<EngineEvent> {
  /** Resolves once the runtime stored the turn; rejects with the submission's named error (busy, invalid, no runner…). */
  readonly ack: Promise<TurnAck>;
  /** Resolves at TURN_COMPLETED; rejects with TurnFailedError, TurnTimeoutError, or the ack's error. */
  readonly result: Promise<TurnResult>;
  /** Cancels the turn across processes (as aborting `signal` does). */
  cancel(reason?: string): Promise<void>;
}

type Cancel = (sessionId: string, turnId: number, reason?: string) => Promise<unknown>;

/** A turn's patience by default ({@link SubmitOptions.timeoutMs}). */
const DEFAULT_TURN_TIMEOUT_MS = 60_000;

/** The longest patience a submission carries (the wire's bound): a longer one is sent as this. */
const MAX_PATIENCE_MS = 86_400_000;

/** The turn's patience, as the submission carries it: a runtime that expects to finish it later refuses it `busy` now. */
const patienceOf = (timeoutMs: number): { patience_ms?: number } =>
  timeoutMs >= 1 ? { patience_ms: Math.min(MAX_PATIENCE_MS, Math.ceil(timeoutMs)) } : {};

/** How long `submit` keeps trying, by default, while the runtime cannot confirm the turn. */
const SUBMIT_PATIENCE_MS = 30_000;

/** A submission whose fate is unknown: the same key, sent again, resolves to the same turn. */
const unconfirmed = (error: unknown): boolean =>
  isConclaveError(error, "unavailable") || isConclaveError(error, "timeout");

/** Submits and follows one turn (the client's `submit`). */
export function streamTurn(
  nc: NatsConnection,
  cancelTurn: Cancel,
  sessionId: string,
  text: string,
  options: SubmitOptions = {},
): TurnStream {
  const events: EngineEvent[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  let failure: unknown = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const ack = (async () => {
    checkSessionId(sessionId); // a NATS subject token it cannot be is refused here, by name
    const submission = {
      text,
      ...(options.idempotencyKey ? { idempotency_key: options.idempotencyKey } : {}),
      ...(options.userId ? { user_id: options.userId } : {}),
      ...(options.onBusy ? { on_busy: options.onBusy } : {}),
      ...(options.pipeline ? { pipeline: options.pipeline } : {}),
      ...patienceOf(options.timeoutMs ?? DEFAULT_TURN_TIMEOUT_MS),
    };
    // Only a keyed submission is sent again: the key resolves a retry to the same turn.
    if (!options.idempotencyKey) return submitTurn(nc, sessionId, submission);
    return throughElections(() => submitTurn(nc, sessionId, submission), {
      patienceMs: options.submitPatienceMs ?? SUBMIT_PATIENCE_MS,
      retryIf: unconfirmed,
    });
  })();
  const cancel = async (reason?: string) => {
    const { session_id, turn_id } = await ack;
    await cancelTurn(session_id, turn_id, reason);
  };
  const onAbort = () => {
    // A reason given to abort(reason) as a string is recorded; the default DOMException is not a reason.
    const reason = typeof options.signal?.reason === "string" ? options.signal.reason : "aborted by the client";
    cancel(reason).catch(() => {});
  };
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener("abort", onAbort, { once: true });
  const result = ack
    .then((acked) =>
      watchTurn(
        nc,
        acked,
        (event) => {
          events.push(event);
          notify();
        },
        options.timeoutMs ?? DEFAULT_TURN_TIMEOUT_MS,
      ),
    )
    .then((completed): TurnResult => {
      const { outcome } = completed.payload;
      if (outcome.status === "Failed")
        throw new TurnFailedError(completed.session_id, completed.turn_id, outcome.error);
      return {
        sessionId: completed.session_id,
        turnId: completed.turn_id,
        outcome,
        response: completed.payload.response,
        usage: completed.payload.usage,
        totalTimeMs: completed.payload.total_time_ms,
      };
    })
    .finally(() => {
      options.signal?.removeEventListener("abort", onAbort);
    });
  result.then(
    () => {
      ended = true;
      notify();
    },
    (error: unknown) => {
      ended = true;
      failure = error instanceof TurnFailedError ? null : error; // a Failed turn's events end with TURN_COMPLETED
      notify();
    },
  );
  ack.catch(() => {}); // reported through `result` and the iteration as well
  return {
    ack,
    result,
    cancel,
    async *[Symbol.asyncIterator]() {
      let next = 0;
      for (;;) {
        while (next < events.length) {
          const event = events[next++]!;
          yield event;
          if (event.kind === "TURN_COMPLETED") return;
        }
        if (ended) {
          if (failure) throw failure;
          return;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
  };
}

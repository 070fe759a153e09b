/**
 * The chat's one piece with effects: it holds the view model, applies every
 * action through chatReducer, and acts on the transitions the reducer makes:
 * a message accepted for sending is submitted through the client and its
 * events dispatched as they stream; Ctrl-C on a running turn aborts it (the
 * client cancels it across processes, and the turn ends Cancelled); a quit
 * cancels the turn in flight and closes the chat.
 */

import { describeFailure } from "../cli/failures.ts";
import type { ConclaveClient } from "../client/index.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { deadlineSignal } from "../deadline.ts";
import { type ChatAction, type ChatState, chatReducer, initialChatState, pastTurns } from "./state.ts";

/** What the chat needs of the client: submitting turns, and reading a session's stored events. */
export type ChatClient = Pick<ConclaveClient, "submit" | "events">;

/** Recorded as the outcome's reason of a turn cancelled from the chat. */
export const CANCEL_REASON = "cancelled with Ctrl-C in conclave chat";

/** Holds a chat's state, runs its turns, and tells subscribers (the view) when the state changed. */
export class ChatController {
  readonly #client: ChatClient;
  readonly #onQuit: () => void;
  readonly #listeners = new Set<() => void>();
  #state: ChatState;
  /** Aborts the turn in flight. */
  #abort: AbortController | null = null;
  /** Settles when the turn in flight has finished streaming. */
  #running: Promise<void> = Promise.resolve();

  /** `onQuit` runs once, when the user asks to quit. */
  constructor(client: ChatClient, sessionId: string, onQuit: () => void) {
    this.#client = client;
    this.#onQuit = onQuit;
    this.#state = initialChatState(sessionId);
  }

  /** The current view model (a new object after every change). */
  readonly getState = (): ChatState => this.#state;

  /** Calls `listener` after every change; returns the unsubscribe function. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  /** Applies `action`, then does what the transition asks for (submit, cancel, quit). */
  readonly dispatch = (action: ChatAction): void => {
    const before = this.#state;
    const after = chatReducer(before, action);
    if (after === before) return;
    this.#state = after;
    for (const listener of this.#listeners) listener();
    if (after.quit && !before.quit) {
      this.#abort?.abort(CANCEL_REASON);
      this.#onQuit();
    } else if (after.phase === "submitting" && before.phase !== "submitting" && after.turn) {
      this.#running = this.#run(after.turn.text);
    } else if (after.phase === "cancelling" && before.phase !== "cancelling") {
      this.#abort?.abort(CANCEL_REASON);
    }
  };

  /**
   * Reads the session's earlier turns into the history (before the chat takes
   * input). Best effort: when they cannot be read within `timeoutMs` (no
   * runner, say), the chat starts empty and the first message says why.
   */
  async restore(timeoutMs = 3_000): Promise<void> {
    const events: EngineEvent[] = [];
    try {
      const signal = deadlineSignal(timeoutMs);
      for await (const { event } of this.#client.events(this.#state.sessionId, { follow: false, signal }))
        events.push(event);
    } catch {
      return;
    }
    const turns = pastTurns(events);
    if (turns.length > 0) this.dispatch({ type: "restored", turns });
  }

  /** Settles once the turn in flight (if any) has stopped streaming. */
  settled(): Promise<void> {
    return this.#running;
  }

  async #run(text: string): Promise<void> {
    const abort = new AbortController();
    this.#abort = abort;
    try {
      const stream = this.#client.submit(this.#state.sessionId, text, { signal: abort.signal });
      stream.ack.then(
        (ack) => this.dispatch({ type: "accepted", turnId: ack.turn_id }),
        () => {}, // the stream reports the same failure
      );
      for await (const event of stream) this.dispatch({ type: "event", event });
      this.dispatch({ type: "ended" });
    } catch (error) {
      // Cancelled by Ctrl-C: the abort is the expected way out, not a failure.
      if (abort.signal.aborted) this.dispatch({ type: "ended" });
      else this.dispatch({ type: "failed", message: describeFailure(error).message });
    } finally {
      if (this.#abort === abort) this.#abort = null;
    }
  }
}

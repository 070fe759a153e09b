/**
 * The chat's view model and the one reducer that changes it: from the user's
 * keys (typing, Enter, Ctrl-C) and the running turn's events to what the
 * terminal shows. Pure and synchronous; the controller (controller.ts) does
 * the I/O and dispatches what happened.
 */
import type { EngineEvent } from "../contracts/events.ts";
import { STAGES, type Stage } from "../contracts/turn.ts";
import { applyTurnEvent, isSettled, newTurnView, outcomeLine, ranToEnd, type TurnView } from "./turnView.ts";

/**
 * Where the conversation stands: `idle` (the user may send), `submitting` (a
 * message is on its way to a runner), `running` (its turn runs), `cancelling`
 * (Ctrl-C asked the running turn to stop).
 */
export type ChatPhase = "idle" | "submitting" | "running" | "cancelling";

/** One entry of the conversation history. */
export interface ChatMessage {
  /** Unique within a chat, in order. */
  id: number;
  /** `notice`: something the chat itself says (a cancelled turn, an error). */
  role: "user" | "assistant" | "notice";
  text: string;
  /** The turn it belongs to, when known. */
  turnId?: number;
  /** How a notice should look. */
  tone?: "info" | "warning" | "error";
}

/** Everything the chat shows. */
export interface ChatState {
  sessionId: string;
  phase: ChatPhase;
  /** The input line. */
  input: string;
  /** The conversation: the user's messages, the replies, the chat's notices. */
  history: ChatMessage[];
  /** The running turn, or the last one (kept on screen until the next message). */
  turn: TurnView | null;
  /** A passing hint for the status line (e.g. why Enter did nothing). */
  hint: string | null;
  /** Set once the user asked to quit: the app unmounts. */
  quit: boolean;
}

/** What happened, from the keyboard or from the turn. */
export type ChatAction =
  /** Text typed (or pasted) into the input line. */
  | { type: "typed"; text: string }
  /** Backspace. */
  | { type: "erased" }
  /** Ctrl-U: the input line emptied. */
  | { type: "cleared" }
  /** Enter: send the input line. Refused (with a hint) while a turn runs or when the line is blank. */
  | { type: "submitted" }
  /** The runner acknowledged the submission. */
  | { type: "accepted"; turnId: number }
  /** One event of the running turn. */
  | { type: "event"; event: EngineEvent }
  /** The turn's event stream ended (after TURN_COMPLETED, or cut short). */
  | { type: "ended" }
  /** Submitting or following the turn failed: `message` says why, in one line. */
  | { type: "failed"; message: string }
  /** Ctrl-C: cancels a running turn; quits when there is none, or on a second Ctrl-C. */
  | { type: "interrupted" }
  /** Quit now, whatever runs (SIGTERM, the terminal closed): a running turn is cancelled. */
  | { type: "quit" }
  /** Earlier turns of the session (read back when the chat opens), oldest first. */
  | { type: "restored"; turns: PastTurn[] };

/** One earlier turn of the session, as the conversation history shows it. */
export interface PastTurn {
  turnId: number;
  text: string;
  /** The reply; null when the turn has not completed, or ended Failed or Cancelled (nothing was said). */
  response: string | null;
}

/** The session's earlier turns from its stored events, oldest first. */
export function pastTurns(events: Iterable<EngineEvent>): PastTurn[] {
  const turns = new Map<number, PastTurn>();
  for (const event of events) {
    if (event.kind === "TURN_STARTED" && !turns.has(event.turn_id))
      turns.set(event.turn_id, { turnId: event.turn_id, text: event.payload.user_input, response: null });
    const turn = turns.get(event.turn_id);
    if (event.kind === "TURN_COMPLETED" && turn) {
      const { status } = event.payload.outcome;
      if (status === "Complete" || status === "PartialSuccess") turn.response = event.payload.response;
    }
  }
  return [...turns.values()].sort((a, b) => a.turnId - b.turnId);
}

/** A chat on `sessionId` with nothing said yet. */
export function initialChatState(sessionId: string): ChatState {
  return { sessionId, phase: "idle", input: "", history: [], turn: null, hint: null, quit: false };
}

const said = (history: ChatMessage[], message: Omit<ChatMessage, "id">): ChatMessage[] => [
  ...history,
  { id: (history.at(-1)?.id ?? 0) + 1, ...message },
];

/** True while a turn is on its way or running: Ctrl-C then cancels it instead of quitting. */
export const isBusy = (state: ChatState): boolean => state.phase === "submitting" || state.phase === "running";

/** What Ctrl-C does now: cancel the turn in flight, or quit. */
export const interruptIntent = (state: ChatState): "cancel" | "quit" => (isBusy(state) ? "cancel" : "quit");

/** The state after `action`. */
export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "typed":
      return { ...state, input: state.input + action.text, hint: null };
    case "erased":
      return { ...state, input: [...state.input].slice(0, -1).join("") };
    case "cleared":
      return { ...state, input: "" };
    case "submitted": {
      const text = state.input.trim();
      if (!text) return state;
      if (state.phase !== "idle")
        return { ...state, hint: "a turn is running: wait for its reply, or Ctrl-C to cancel it" };
      return {
        ...state,
        phase: "submitting",
        input: "",
        hint: null,
        history: said(state.history, { role: "user", text }),
        turn: newTurnView(text),
      };
    }
    case "accepted":
      if (!state.turn || state.phase === "idle") return state;
      return {
        ...state,
        phase: state.phase === "submitting" ? "running" : state.phase,
        turn: { ...state.turn, turnId: action.turnId },
      };
    case "event":
      return onEvent(state, action.event);
    case "ended":
      return finish(state, null);
    case "failed":
      return finish(state, action.message);
    case "interrupted":
      if (interruptIntent(state) === "quit") return { ...state, quit: true };
      return { ...state, phase: "cancelling", hint: null };
    case "quit":
      return state.quit ? state : { ...state, quit: true };
    case "restored": {
      let history = state.history;
      for (const { turnId, text, response } of action.turns) {
        history = said(history, { role: "user", text, turnId });
        if (response !== null) history = said(history, { role: "assistant", text: response || "(no reply)", turnId });
      }
      return { ...state, history };
    }
  }
}

function onEvent(state: ChatState, event: EngineEvent): ChatState {
  const turn = state.turn;
  if (!turn || state.phase === "idle") return state; // a late event of a turn already settled
  if (turn.turnId !== null && event.turn_id !== turn.turnId) return state;
  const next = applyTurnEvent(turn, event);
  if (event.kind !== "TURN_COMPLETED") {
    return { ...state, phase: state.phase === "submitting" ? "running" : state.phase, turn: next };
  }
  const outcome = next.outcome;
  const turnId = next.turnId ?? event.turn_id;
  let history = state.history;
  if (outcome?.status !== "Cancelled" && outcome?.status !== "Failed")
    history = said(history, { role: "assistant", text: next.response || "(no reply)", turnId });
  const line = outcomeLine(next);
  if (outcome && outcome.status !== "Complete" && line) {
    const tone = outcome.status === "Failed" ? "error" : "warning";
    history = said(history, { role: "notice", text: `turn ${turnId}: ${line}`, turnId, tone });
  }
  return { ...state, phase: "idle", turn: next, history };
}

/** The turn's stream ended: with TURN_COMPLETED already applied, nothing more to say; otherwise say why. */
function finish(state: ChatState, failure: string | null): ChatState {
  if (state.phase === "idle") {
    return failure
      ? { ...state, history: said(state.history, { role: "notice", text: failure, tone: "error" }) }
      : state;
  }
  const turnId = state.turn?.turnId ?? undefined;
  const cancelled = state.phase === "cancelling";
  if (turnId === undefined && !cancelled) {
    // Never accepted: no turn to show, only why.
    const text = `not sent: ${failure ?? "the submission ended without an answer"}`;
    return {
      ...state,
      phase: "idle",
      turn: null,
      history: said(state.history, { role: "notice", text, tone: "error" }),
    };
  }
  const label = turnId === undefined ? "the message" : `turn ${turnId}`;
  const stopped = cancelled ? "cancelled" : (failure ?? "its events stopped before it completed");
  const text = cancelled ? `${label}: ✘ cancelled${failure ? ` (${failure})` : ""}` : `${label}: ${stopped}`;
  return {
    ...state,
    phase: "idle",
    turn: state.turn && { ...state.turn, stopped },
    history: said(state.history, { role: "notice", text, tone: cancelled ? "warning" : "error", turnId }),
  };
}

/** Each stage of the pipeline: done, running, still to come, or where the turn stopped (and `safety` once entered). */
export function stageMarks(
  turn: TurnView | null,
): { stage: Stage; mark: "done" | "running" | "pending" | "stopped" }[] {
  const seen = turn?.stages ?? [];
  const order: Stage[] = seen.includes("safety") ? [...STAGES.slice(0, 2), "safety", ...STAGES.slice(2)] : [...STAGES];
  const mark = (stage: Stage) => {
    if (!seen.includes(stage)) return "pending";
    if (stage !== turn?.stage) return "done";
    // The last stage entered: running, done if the turn ran to its end, else where it stopped.
    return !isSettled(turn) ? "running" : ranToEnd(turn) ? "done" : "stopped";
  };
  return order.map((stage) => ({ stage, mark: mark(stage) }));
}

/** The status line under the input: where the conversation stands and what the keys do now. */
export function statusLine(state: ChatState): string {
  const where = `session ${state.sessionId}`;
  const turn = state.turn?.turnId ? ` · turn ${state.turn.turnId}` : "";
  switch (state.phase) {
    case "idle":
      return `${where} · ${state.hint ?? "Enter sends · Ctrl-C quits"}`;
    case "submitting":
      return `${where} · sending… · ${state.hint ?? "Ctrl-C cancels"}`;
    case "running":
      return `${where}${turn} · ${state.turn?.stage ?? "queued"} · ${state.hint ?? "Ctrl-C cancels"}`;
    case "cancelling":
      return `${where}${turn} · cancelling… · Ctrl-C again quits`;
  }
}

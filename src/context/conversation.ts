/**
 * The conversation a session's context arena carries: its completed turns
 * after the compaction summary, in short (the first sentence of each side),
 * so that the next compaction folds in every turn the conversation held, not
 * only the few episodes memory retrieved for the turn that compacts.
 *
 * Pure and tokenizer-free: the live turn (machines/turn) and the fold of a
 * session's log (src/runtime/replay.ts) add a turn with the same inputs, the
 * turn's message (TURN_STARTED's `user_input`) and reply (TURN_COMPLETED's `response`).
 */
import {
  CONVERSATION_TURN_CHARS,
  CONVERSATION_TURNS_MAX,
  type ContextArenaState,
  type ConversationTurn,
} from "../contracts/context.ts";

/** The first sentence of a text, on one line (the whole line when it has no sentence end). */
export function firstSentenceOf(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return /^.*?[.!?](?=\s|$)/.exec(line)?.[0] ?? line;
}

/** The first sentence of a text, on one line, at most `maxChars` characters (cut with `…`). */
export function firstSentenceChars(text: string, maxChars = CONVERSATION_TURN_CHARS): string {
  const sentence = firstSentenceOf(text);
  return sentence.length <= maxChars ? sentence : `${sentence.slice(0, maxChars - 1)}…`;
}

/**
 * The arena after a completed turn that planned its agents' context: the turn joins the
 * conversation (a turn with no reply does not), turns the summary covers leave it, and only the
 * newest {@link CONVERSATION_TURNS_MAX} stay.
 */
export function withConversationTurn(
  state: ContextArenaState,
  turn: { turn_id: number; user_text: string; response: string },
): ContextArenaState {
  if (turn.response.trim().length === 0 || turn.turn_id < 1) return state;
  const entry: ConversationTurn = {
    turn_id: turn.turn_id,
    user: firstSentenceChars(turn.user_text),
    reply: firstSentenceChars(turn.response),
  };
  const through = state.summary?.through_turn ?? 0;
  const conversation = [...(state.conversation ?? []).filter((item) => item.turn_id !== turn.turn_id), entry]
    .filter((item) => item.turn_id > through)
    .sort((a, b) => a.turn_id - b.turn_id)
    .slice(-CONVERSATION_TURNS_MAX);
  return { ...state, conversation };
}

/** The conversation's turns the summary does not cover (all of them without a summary). */
export function afterSummary(
  conversation: readonly ConversationTurn[] | undefined,
  throughTurn: number,
): ConversationTurn[] | undefined {
  return conversation?.filter((item) => item.turn_id > throughTurn);
}

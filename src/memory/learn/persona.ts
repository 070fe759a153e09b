/**
 * Persona evolution on a cadence: every N turns the persona's traits move a little toward what
 * memory shows the user cares about. Everything here is pure and the state is plain JSON, so a
 * runtime that persists it after each turn and restores it on start neither resets the cadence
 * (evolving again too soon) nor repeats an evolution it already made.
 */

/** The persona's evolving part, persisted with the runtime state. */
export interface PersonaState {
  /** Named traits, each in 0..1 (`attentive_to_<topic>`, `follow_through`, `knows_user`). */
  traits: Record<string, number>;
  /** Turns completed so far. */
  turn_count: number;
  /** `turn_count` when the persona last evolved (0 before the first time). */
  last_evolved_turn: number;
}

/** What memory shows, as signals for one evolution. */
export interface PersonaSignals {
  /** How often each topic came up in memory (e.g. over the facts and recent episodes). */
  topics: Record<string, number>;
  /** How many user facts memory holds. */
  facts: number;
  /** How many threads are open. */
  threads_open: number;
}

/** How far one evolution moves a trait toward its target: slow, so one odd stretch of turns does not flip the persona. */
export const PERSONA_SMOOTHING = 0.3;
/** A trait that falls below this is dropped, so traits of topics long gone do not pile up. */
export const PERSONA_TRAIT_FLOOR = 0.01;
/** At most this many `attentive_to_*` traits are kept (the strongest). */
export const PERSONA_MAX_TOPIC_TRAITS = 16;

const ATTENTIVE = "attentive_to_";

/** A persona before any turn. */
export function initialPersona(): PersonaState {
  return { traits: {}, turn_count: 0, last_evolved_turn: 0 };
}

/** The state after one more turn. */
export function advanceTurn(state: PersonaState): PersonaState {
  return { ...state, traits: { ...state.traits }, turn_count: state.turn_count + 1 };
}

/**
 * Whether the persona is due to evolve: true exactly when `turn_count - last_evolved_turn >= every`.
 * `every` of 0 or less (or not a number) means never, as an extraction interval of 0 does.
 */
export function shouldEvolve(state: PersonaState, every: number): boolean {
  if (!(every > 0)) return false;
  return state.turn_count - state.last_evolved_turn >= every;
}

/**
 * One evolution, deterministic, marking `last_evolved_turn = turn_count`. Each trait moves
 * {@link PERSONA_SMOOTHING} of the way from its value toward a target in 0..1:
 *
 * - `attentive_to_<topic>`: `n / (n + 2)` for a topic seen `n` times (rising with frequency,
 *   never reaching 1); topics absent from the signals have target 0 and fade.
 * - `follow_through`: `open / (open + 2)` for the open threads: more open threads, more care to
 *   follow up.
 * - `knows_user`: `facts / (facts + 5)`.
 *
 * Values are rounded to 4 decimals (so the persisted JSON is stable), clamped to 0..1; traits
 * under {@link PERSONA_TRAIT_FLOOR} are dropped and only the {@link PERSONA_MAX_TOPIC_TRAITS}
 * strongest topic traits are kept. Other traits in the state are left as they are.
 */
export function evolvePersona(state: PersonaState, signals: PersonaSignals): PersonaState {
  const traits: Record<string, number> = {};
  const topicTraits: [string, number][] = [];

  const targets = new Map<string, number>();
  for (const [topic, count] of Object.entries(signals.topics)) {
    if (count > 0 && topic) targets.set(`${ATTENTIVE}${topic}`, saturate(count, 2));
  }
  for (const [name, value] of Object.entries(state.traits)) {
    if (name.startsWith(ATTENTIVE) && !targets.has(name)) targets.set(name, 0);
    else if (!name.startsWith(ATTENTIVE)) traits[name] = value;
  }
  for (const [name, target] of targets) {
    const value = smooth(state.traits[name] ?? 0, target);
    if (value >= PERSONA_TRAIT_FLOOR) topicTraits.push([name, value]);
  }
  // Strongest first; names break ties so the choice does not depend on object key order.
  topicTraits.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  for (const [name, value] of topicTraits.slice(0, PERSONA_MAX_TOPIC_TRAITS)) traits[name] = value;

  setOrDrop(traits, "follow_through", smooth(state.traits.follow_through ?? 0, saturate(signals.threads_open, 2)));
  setOrDrop(traits, "knows_user", smooth(state.traits.knows_user ?? 0, saturate(signals.facts, 5)));

  return { traits: sorted(traits), turn_count: state.turn_count, last_evolved_turn: state.turn_count };
}

/**
 * One turn of the cadence: advance the turn, and evolve when due. `signals` is called only then,
 * so a caller that gathers them from the store pays for it once every `every` turns.
 */
export function personaTurn(
  state: PersonaState,
  every: number,
  signals: () => PersonaSignals,
): { state: PersonaState; evolved: boolean } {
  const next = advanceTurn(state);
  if (!shouldEvolve(next, every)) return { state: next, evolved: false };
  return { state: evolvePersona(next, signals()), evolved: true };
}

/** Longest persona text memory hands a turn (characters): the context arena cuts it further, to its zone's budget. */
export const PERSONA_TEXT_MAX = 2_000;

/**
 * The persona as the agents read it: its traits, strongest first (names break ties), each as words
 * with its value, e.g. `attentive to jazz 0.51, knows user 0.2`. Empty when it has no trait; cut
 * to {@link PERSONA_TEXT_MAX} characters, weakest traits first.
 */
export function personaText(traits: Readonly<Record<string, number>>): string {
  const parts = Object.entries(traits)
    .filter(([, value]) => Number.isFinite(value))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([name, value]) => `${name.replaceAll("_", " ")} ${Math.round(value * 100) / 100}`);
  if (parts.length === 0) return "";
  const lead = "What this conversation has taught you to attend to: ";
  let text = lead + parts.join(", ");
  if (text.length > PERSONA_TEXT_MAX) text = `${text.slice(0, PERSONA_TEXT_MAX - 1)}…`;
  return text;
}

/** `n / (n + half)`: 0 at 0, one half at `half`, approaching 1. Negative or NaN counts as 0. */
function saturate(n: number, half: number): number {
  return n > 0 ? n / (n + half) : 0;
}

function smooth(value: number, target: number): number {
  const next = value + PERSONA_SMOOTHING * (target - value);
  return Math.round(Math.min(1, Math.max(0, next)) * 10_000) / 10_000;
}

function setOrDrop(traits: Record<string, number>, name: string, value: number): void {
  if (value >= PERSONA_TRAIT_FLOOR) traits[name] = value;
  else delete traits[name];
}

/** Traits with their names in order, so equal states serialise to equal JSON. */
function sorted(traits: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(traits).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

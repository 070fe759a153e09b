/**
 * Turn services as interceptors, as Temporal's TypeScript SDK composes its
 * workflow interceptors: an interceptor implements only the calls it
 * intercepts, each taking the call's input (one option object) and `next`,
 * the rest of the chain; {@link composeTurnServices} puts a list of them
 * around a base's services once, when a runner starts.
 */
import type { CallAgentOptions, TurnServices } from "./turnServices.ts";

/** One call's arguments, as the option object an interceptor is given. */
export interface TurnCallInputs {
  senseFast: { text: string };
  screen: { request: Parameters<TurnServices["screen"]>[0] };
  retrieveMemory: { request: Parameters<TurnServices["retrieveMemory"]>[0]; signal: AbortSignal };
  planWaves: { request: Parameters<TurnServices["planWaves"]>[0]; signal: AbortSignal };
  /** The request and signal, and the call's options (an interceptor that changes `onStream` hands on its own). */
  callAgent: CallAgentOptions & { request: Parameters<TurnServices["callAgent"]>[0]; signal: AbortSignal };
  deliberate: { request: Parameters<TurnServices["deliberate"]>[0]; signal: AbortSignal };
  decide: { request: Parameters<TurnServices["decide"]>[0]; signal: AbortSignal };
  safetyCouncil: { request: Parameters<TurnServices["safetyCouncil"]>[0]; signal: AbortSignal };
  renderVoice: {
    request: Parameters<TurnServices["renderVoice"]>[0];
    signal: AbortSignal;
    onStream: Parameters<TurnServices["renderVoice"]>[2];
  };
  runCritics: { request: Parameters<TurnServices["runCritics"]>[0]; signal: AbortSignal };
  commitMemory: { request: Parameters<TurnServices["commitMemory"]>[0]; signal: AbortSignal };
}

/** A turn service's name. */
export type TurnCall = keyof TurnServices;

/** The rest of the chain for one call: the next interceptor's, or the base's at the end. */
export type TurnNext<C extends TurnCall> = (input: TurnCallInputs[C]) => ReturnType<TurnServices[C]>;

/**
 * What one layer of a turn's services does: any of the calls, each given
 * its input and `next`. A call it leaves out goes straight on. One that
 * hands `next` an input of its own keeps the callbacks it was given (spread
 * the input): a callback dropped here is one the turn never hears from.
 */
export type TurnInterceptor = {
  readonly [C in TurnCall]?: (input: TurnCallInputs[C], next: TurnNext<C>) => ReturnType<TurnServices[C]>;
};

/** Every turn service's name, in the order TurnServices declares them. */
export const TURN_CALLS: readonly TurnCall[] = [
  "senseFast",
  "screen",
  "retrieveMemory",
  "planWaves",
  "callAgent",
  "deliberate",
  "decide",
  "safetyCouncil",
  "renderVoice",
  "runCritics",
  "commitMemory",
];

/** One call's chain, innermost first built: the first interceptor of the list is outermost. */
function chain<C extends TurnCall>(
  interceptors: readonly (TurnInterceptor | null)[],
  call: C,
  last: TurnNext<C>,
): TurnNext<C> | null {
  let next = last;
  let intercepted = false;
  for (let at = interceptors.length - 1; at >= 0; at--) {
    const interceptor = interceptors[at];
    const intercept = interceptor?.[call];
    if (!intercept) continue;
    const inner = next;
    next = (input) => intercept.call(interceptor, input, inner);
    intercepted = true;
  }
  return intercepted ? next : null;
}

/**
 * `base`'s services with `interceptors` around them: the first of the list
 * is outermost (it sees a call first and its answer last), the last is next
 * to `base`; a `null` entry (a layer not in use) is skipped. A call no
 * interceptor takes goes to `base` directly, with nothing allocated. Compose
 * once (per runner), not per turn.
 */
export function composeTurnServices(
  base: TurnServices,
  interceptors: readonly (TurnInterceptor | null)[],
): TurnServices {
  const senseFast = chain(interceptors, "senseFast", ({ text }) => base.senseFast(text));
  const screen = chain(interceptors, "screen", ({ request }) => base.screen(request));
  const retrieveMemory = chain(interceptors, "retrieveMemory", (i) => base.retrieveMemory(i.request, i.signal));
  const planWaves = chain(interceptors, "planWaves", (i) => base.planWaves(i.request, i.signal));
  // The input is the options too: nothing to build for the base.
  const callAgent = chain(interceptors, "callAgent", (i) => base.callAgent(i.request, i.signal, i));
  const deliberate = chain(interceptors, "deliberate", (i) => base.deliberate(i.request, i.signal));
  const decide = chain(interceptors, "decide", (i) => base.decide(i.request, i.signal));
  const safetyCouncil = chain(interceptors, "safetyCouncil", (i) => base.safetyCouncil(i.request, i.signal));
  const renderVoice = chain(interceptors, "renderVoice", (i) => base.renderVoice(i.request, i.signal, i.onStream));
  const runCritics = chain(interceptors, "runCritics", (i) => base.runCritics(i.request, i.signal));
  const commitMemory = chain(interceptors, "commitMemory", (i) => base.commitMemory(i.request, i.signal));
  return {
    senseFast: senseFast ? (text) => senseFast({ text }) : (text) => base.senseFast(text),
    screen: screen ? (request) => screen({ request }) : (request) => base.screen(request),
    retrieveMemory: retrieveMemory
      ? (request, signal) => retrieveMemory({ request, signal })
      : (request, signal) => base.retrieveMemory(request, signal),
    planWaves: planWaves
      ? (request, signal) => planWaves({ request, signal })
      : (request, signal) => base.planWaves(request, signal),
    callAgent: callAgent
      ? (request, signal, options) => callAgent({ ...options, request, signal })
      : (request, signal, options) => base.callAgent(request, signal, options),
    deliberate: deliberate
      ? (request, signal) => deliberate({ request, signal })
      : (request, signal) => base.deliberate(request, signal),
    decide: decide
      ? (request, signal) => decide({ request, signal })
      : (request, signal) => base.decide(request, signal),
    safetyCouncil: safetyCouncil
      ? (request, signal) => safetyCouncil({ request, signal })
      : (request, signal) => base.safetyCouncil(request, signal),
    renderVoice: renderVoice
      ? (request, signal, onStream) => renderVoice({ request, signal, onStream })
      : (request, signal, onStream) => base.renderVoice(request, signal, onStream),
    runCritics: runCritics
      ? (request, signal) => runCritics({ request, signal })
      : (request, signal) => base.runCritics(request, signal),
    commitMemory: commitMemory
      ? (request, signal) => commitMemory({ request, signal })
      : (request, signal) => base.commitMemory(request, signal),
  };
}

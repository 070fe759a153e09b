import { zeroSensors } from "../../../machines/turn/index.ts";
import type { AgentStreamPart } from "../../contracts/agent.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import type { TurnInterceptor } from "../turnServices/turnInterceptor.ts";
import type { TurnServices } from "../turnServices/turnServices.ts";
import {
  type InterceptorChains,
  type InterceptorContext,
  type RequestInterceptor,
  screenAgentRequest,
  screenPacket,
  screenRequest,
} from "./interceptors.ts";
import { StreamScreen } from "./streamScreen.ts";

type ContextOf = (sessionId: string, turnId: number) => InterceptorContext;

/** One cache per chains object, so the stored-record screen and the services of a runner share each turn's context. */
const contextCaches = new WeakMap<InterceptorChains, ContextOf>();

/** The context every interceptor of one turn sees: built once per turn, when the turn is first screened or recorded. */
function turnContexts(chains: InterceptorChains): ContextOf {
  const cached = contextCaches.get(chains);
  if (cached) return cached;
  const contexts = new Map<string, InterceptorContext>();
  const contextOf: ContextOf = (sessionId, turnId) => {
    const requestId = `${turnKey(sessionId, turnId)}`;
    let context = contexts.get(requestId);
    if (!context) {
      context = { request_id: requestId, start_time: Date.now(), session_id: sessionId, turn_id: turnId };
      contexts.set(requestId, context);
      // A turn is screened within seconds; keep the map small on a long-lived runner.
      if (contexts.size > 10_000) contexts.delete(contexts.keys().next().value as string);
    }
    return context;
  };
  contextCaches.set(chains, contextOf);
  return contextOf;
}

/**
 * The interceptor chains as a turn interceptor: `screen` runs the
 * request chain, each agent's request goes through its `onAgentRequest`
 * (screenAgentRequest), and every stream the voice produces goes through the
 * response chain as a stream (StreamScreen) before anyone sees a packet of
 * it. The reply is what the user was sent — the `default` stream as
 * released — screened once more as a whole.
 */
export function screeningInterceptor(chains: InterceptorChains): TurnInterceptor {
  const contextOf = turnContexts(chains);
  const screensAgents = chains.request.some((interceptor) => interceptor.onAgentRequest !== undefined);
  return {
    screen: async ({ request }) =>
      screenRequest(chains.request, request, contextOf(request.session_id, request.turn_id)),
    // Each agent's request goes through the request chain's onAgentRequest; its named streams go through
    // the response chain as streams, as the voice's do.
    callAgent: async (given, next) => {
      const context = contextOf(given.request.session_id, given.request.turn_id);
      const input = screensAgents
        ? { ...given, request: screenAgentRequest(chains.request, given.request, context).request }
        : given;
      const { onStream } = input;
      if (!onStream || chains.response.length === 0) return next(input);
      const screens = new Map<string, StreamScreen>();
      const screenOf = (part: AgentStreamPart) => {
        let screen = screens.get(part.stream);
        if (!screen) {
          screen = new StreamScreen(chains.response, `${part.agent_id}:${part.stream}`, context);
          screens.set(part.stream, screen);
        }
        return screen;
      };
      const screened: typeof onStream = (part) => {
        if (part.type === "intercepted") return onStream(part);
        if (part.type === "start") {
          screenOf(part);
          return onStream(part);
        }
        const released = part.type === "chunk" ? screenOf(part).push(part.delta ?? "") : screenOf(part).flush();
        // Built field by field: the part's own delta is the text before redaction.
        const { session_id, turn_id, agent_id, stream } = part;
        for (const interception of released.interceptions)
          onStream({ type: "intercepted", session_id, turn_id, agent_id, stream, ...interception });
        if (released.text) onStream({ ...part, type: "chunk", delta: released.text });
        if (part.type === "end") {
          screens.delete(part.stream);
          onStream(part);
        }
      };
      return next({ ...input, onStream: screened });
    },
    renderVoice: async (input, next) => {
      const { request, onStream } = input;
      if (chains.response.length === 0) return next(input);
      const context = contextOf(request.session_id, request.turn_id);
      const screens = new Map<string, StreamScreen>();
      let delivered = "";
      let streamed = false;
      const send = (
        part: { stream_id: Parameters<typeof onStream>[0]["stream_id"] },
        released: ReturnType<StreamScreen["push"]>,
      ) => {
        for (const interception of released.interceptions)
          onStream({ type: "intercepted", stream_id: part.stream_id, ...interception });
        if (!released.text) return;
        if (part.stream_id === "default") delivered += released.text;
        onStream({ type: "chunk", stream_id: part.stream_id, delta: released.text });
      };
      const reply = await next({
        ...input,
        onStream: (part) => {
          if (part.type === "intercepted") return onStream(part);
          if (part.type === "start") {
            screens.set(part.stream_id, new StreamScreen(chains.response, part.stream_id, context));
            // A reply stream started again (a rendering cut short, replaced) is the reply afresh.
            if (part.stream_id === "default") delivered = "";
            return onStream(part);
          }
          const screen = screens.get(part.stream_id) ?? new StreamScreen(chains.response, part.stream_id, context);
          screens.set(part.stream_id, screen);
          if (part.type === "chunk") {
            if (part.stream_id === "default") streamed = true;
            return send(part, screen.push(part.delta));
          }
          // The stream ends: what was held back is released before its end.
          send(part, screen.flush());
          screens.delete(part.stream_id);
          onStream(part);
        },
      });
      // A stream the voice never closed (cut short) still releases what it held: into the reply, not the wire.
      const held = screens.get("default")?.flush();
      if (held?.text) delivered += held.text;
      const whole = screenPacket(
        chains.response,
        { stream_id: "default", delta: streamed ? delivered : reply.text },
        context,
      );
      return { ...reply, text: (whole.delta ?? "").trim() };
    },
  };
}

/**
 * Screens what the event log stores of the user's message: the `stored`
 * chain (default: PII redaction) on `TURN_STARTED.user_input`, so the log
 * never keeps raw personal data unless the operator sets `stored: []`.
 */
export function storedRecordScreen(
  chains: InterceptorChains,
): (turn: { session_id: string; turn_id: number }, record: TurnRecord) => TurnRecord {
  const stored: readonly RequestInterceptor[] = chains.stored ?? [];
  if (stored.length === 0) return (_turn, record) => record;
  const contextOf = turnContexts(chains);
  return (turn, record) => {
    if (record.kind !== "TURN_STARTED") return record;
    const context = contextOf(turn.session_id, turn.turn_id);
    const screened = screenRequest(stored, { text: record.payload.user_input, sensors: zeroSensors() }, context);
    return screened.text === record.payload.user_input
      ? record
      : { ...record, payload: { ...record.payload, user_input: screened.text } };
  };
}

/** No interception: the message goes to the agents as sent. */
export const passThroughScreen: TurnServices["screen"] = async ({ text }) => ({
  text,
  interceptions: [],
  blocked: false,
});

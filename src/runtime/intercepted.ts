import type { InterceptorChains, InterceptorContext } from "./interceptors.ts";
import { screenPacket, screenRequest } from "./interceptors.ts";
import type { TurnServices } from "./turnServices.ts";

const contextOf = (sessionId: string, turnId: number): InterceptorContext => ({
  request_id: `${sessionId}.${turnId}`,
  start_time: Date.now(),
  session_id: sessionId,
  turn_id: turnId,
});

/**
 * Puts the interceptor chains around a turn's services: `screen` runs the
 * request chain, and every packet the voice streams goes through the response
 * chain before anyone sees it. The reply is what the user was sent: the
 * packets of the `default` stream as delivered.
 */
export function withInterceptors(services: TurnServices, chains: InterceptorChains): TurnServices {
  return {
    ...services,
    screen: async (request) => screenRequest(chains.request, request, contextOf(request.session_id, request.turn_id)),
    renderVoice: async (request, signal, onStream) => {
      if (chains.response.length === 0) return services.renderVoice(request, signal, onStream);
      const context = contextOf(request.session_id, request.turn_id);
      let delivered = "";
      let streamed = false;
      const reply = await services.renderVoice(request, signal, (part) => {
        if (part.type !== "chunk") return onStream(part);
        const screened = screenPacket(chains.response, part, context);
        for (const interception of screened.interceptions)
          onStream({ type: "intercepted", stream_id: part.stream_id, ...interception });
        if (screened.delta === null) return;
        if (part.stream_id === "default") {
          streamed = true;
          delivered += screened.delta;
        }
        onStream({ ...part, delta: screened.delta });
      });
      if (streamed) return { ...reply, text: delivered.trim() };
      const whole = screenPacket(chains.response, { stream_id: "default", delta: reply.text }, context);
      return { ...reply, text: whole.delta ?? "" };
    },
  };
}

/** No interception: the message goes to the agents as sent. */
export const passThroughScreen: TurnServices["screen"] = async ({ text }) => ({
  text,
  interceptions: [],
  blocked: false,
});

import { fromCallback, fromPromise } from "xstate";
import { turnMachine } from "../../../machines/turn/index.ts";
import {
  conversationRequest,
  summariseAsk,
  type TurnMemoryReply,
  type TurnMemoryRequest,
  turnsToRead,
} from "../../context/compactionRead.ts";
import type { VoiceRequest } from "../../contracts/council.ts";
import { ErrorCode } from "../../contracts/errors.ts";
import type { RunWaveInput, TurnRecord, VoiceEvent, WaveEvent } from "../../contracts/turnProtocol.ts";
import { codeOf, messageOf } from "../../errors.ts";
import type { TurnServices } from "./turnServices.ts";

/** The wire code an agent's or the voice's failure carries, checked; anything else is `agent_failed`. */
const errorCode = (error: unknown): ErrorCode => {
  const wire = ErrorCode.safeParse(codeOf(error));
  return wire.success ? wire.data : "agent_failed";
};

/**
 * Why a wave's or the voice's calls are stopped: the turn left the stage. One reason for every stop (an
 * `abort()` without one builds a DOMException each time): nothing reads it, what a stopped call reports
 * is dropped unsent.
 */
const STAGE_LEFT = new DOMException("the turn left the stage", "AbortError");

/** One agent request per agent of the wave, all at once; each answer is sent back as it arrives. */
const runWave = (services: TurnServices) =>
  fromCallback<{ type: "noop" }, RunWaveInput>(({ input, sendBack }) => {
    const abort = new AbortController();
    let open = input.agents.length;
    const settle = (event: WaveEvent) => {
      if (abort.signal.aborted) return;
      sendBack(event);
      open -= 1;
      if (open === 0) sendBack({ type: "wave.done" });
    };
    for (const agentId of input.agents) {
      services
        .callAgent(
          {
            session_id: input.session_id,
            turn_id: input.turn_id,
            agent_id: agentId,
            wave: input.wave,
            mode: "respond",
            round: 0,
            timeout_ms: input.timeout_ms,
            context: input.context,
            ...(input.active_skills ? { active_skills: input.active_skills } : {}),
          },
          abort.signal,
          {
            attempts: input.attempts,
            onStream: (part) => {
              if (abort.signal.aborted) return;
              const stream_id = `${part.agent_id}:${part.stream}`;
              if (part.type === "start")
                sendBack({ type: "agent.stream.start", stream_id, content_type: part.content_type ?? "text/plain" });
              else if (part.type === "chunk")
                sendBack({ type: "agent.stream.chunk", stream_id, delta: part.delta ?? "" });
              else if (part.type === "intercepted") {
                const { interceptor, action, reason } = part;
                sendBack({ type: "agent.stream.intercepted", stream_id, interceptor, action, reason });
              } else sendBack({ type: "agent.stream.end", stream_id });
            },
            onApproval: (asked) => {
              if (!abort.signal.aborted) sendBack({ type: "agent.approval_required", agent_id: agentId, ...asked });
            },
          },
        )
        .then(
          (reply) => settle({ type: "agent.replied", reply }),
          (error: unknown) =>
            settle({
              type: "agent.failed",
              agent_id: agentId,
              code: errorCode(error),
              message: messageOf(error),
            }),
        );
    }
    if (open === 0) sendBack({ type: "wave.done" });
    return () => abort.abort(STAGE_LEFT);
  });

/** The voice's rendering, its stream parts sent back as they come, then `voice.done`. */
const renderVoice = (services: TurnServices) =>
  fromCallback<{ type: "noop" }, VoiceRequest>(({ input, sendBack }) => {
    const abort = new AbortController();
    const send = (event: VoiceEvent) => {
      if (!abort.signal.aborted) sendBack(event);
    };
    services
      .renderVoice(input, abort.signal, (part) => {
        if (part.type === "intercepted") send({ ...part, type: "voice.intercepted" });
        else if (part.type === "start")
          send({ type: "voice.start", stream_id: part.stream_id, content_type: part.content_type });
        else if (part.type === "chunk") send({ type: "voice.chunk", stream_id: part.stream_id, delta: part.delta });
        else send({ type: "voice.end", stream_id: part.stream_id });
      })
      .then(
        (reply) =>
          send({
            type: "voice.done",
            text: reply.text,
            ...(reply.usage ? { usage: reply.usage } : {}),
            ...(reply.fallback ? { fallback: reply.fallback } : {}),
          }),
        (error: unknown) =>
          send({
            type: "voice.failed",
            code: errorCode(error),
            message: messageOf(error),
          }),
      );
    return () => abort.abort(STAGE_LEFT);
  });

/**
 * The context stage's memory read: the retrieval, then, only when the turn will compact (its probe
 * says so, planned with what memory retrieved), a read of the conversation's turns after the summary,
 * which memory's model (when it has one) folds into the summary in the same request.
 */
async function turnMemory(
  services: TurnServices,
  { compaction, ...request }: TurnMemoryRequest,
  signal: AbortSignal,
): Promise<TurnMemoryReply> {
  const reply = await services.retrieveMemory(request, signal);
  const turns = compaction ? turnsToRead(compaction, reply, request.turn_id) : [];
  if (!compaction || turns.length === 0) return reply;
  // A read that fails costs the turn only its compaction's reach: it folds in what memory retrieved.
  const read = await services
    .retrieveMemory(
      conversationRequest(request.session_id, request.turn_id, turns, summariseAsk(compaction, reply)),
      signal,
    )
    .catch(() => null);
  if (!read) return reply;
  return { ...reply, conversation: read.episodes, ...(read.summary ? { summarised: read.summary } : {}) };
}

/**
 * The turn machine with its work done by `services` and its events recorded
 * by `record`: what a session invokes for each turn.
 */
export function provideTurn(
  services: TurnServices,
  record: (context: { session_id: string; turn_id: number }, event: TurnRecord) => void,
) {
  return turnMachine.provide({
    actors: {
      senseFast: fromPromise(({ input }) => services.senseFast(input.text)),
      screen: fromPromise(({ input }) => services.screen(input)),
      safetyCouncil: fromPromise(({ input, signal }) => services.safetyCouncil(input, signal)),
      retrieveMemory: fromPromise(({ input, signal }) => turnMemory(services, input, signal)),
      planWaves: fromPromise(({ input, signal }) => services.planWaves(input, signal)),
      runWave: runWave(services),
      deliberate: fromPromise(({ input, signal }) => services.deliberate(input, signal)),
      decide: fromPromise(({ input, signal }) => services.decide(input, signal)),
      renderVoice: renderVoice(services),
      runCritics: fromPromise(({ input, signal }) => services.runCritics(input, signal)),
      commitMemory: fromPromise(({ input, signal }) => services.commitMemory(input, signal)),
    },
    actions: {
      record: ({ context }, event) => record(context, event),
    },
  });
}

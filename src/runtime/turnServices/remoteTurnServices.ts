import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { AgentDirectory } from "../../agents/directory.ts";
import { InvalidAgentOutputError } from "../../agents/runAgent.ts";
import { RemoteCallError } from "../../bus/errors.ts";
import { requestJson, requestStream } from "../../bus/request.ts";
import { subjects } from "../../bus/subjects.ts";
import { decodeMessage } from "../../bus/wire.ts";
import { CRITIC_NAMES, collectVerdict } from "../../cognition/critics.ts";
import { SEED_SENSORS, type SensorOptions } from "../../cognition/sensors.ts";
import { AgentReply, AgentStreamPart } from "../../contracts/agent.ts";
import { CouncilReply, SafetyCouncilReply, VoiceStreamMessage } from "../../contracts/council.ts";
import { CriticReply } from "../../contracts/critic.ts";
import { MemoryCommitReply, MemoryRetrieveReply } from "../../contracts/memory.ts";
import { PlanWavesReply } from "../../contracts/scheduler.ts";
import type { Usage } from "../../contracts/usage.ts";
import type { Episode } from "../../contracts/workspace.ts";
import { passThroughScreen } from "../interception/intercepted.ts";
import { deliberateRound } from "./deliberate.ts";
import { senseFastWith } from "./localTurnServices.ts";
import { MemoryBacklog, settleCommits } from "./memoryBacklog.ts";
import type { TurnServices } from "./turnServices.ts";

export interface RemoteOptions {
  /** Deadline of one request to a scheduler, council, critic or memory worker. Default 5 s. */
  requestTimeoutMs: number;
  /**
   * Council and critic requests are sent up to this many times within `requestTimeoutMs`, each
   * given its share: one whose worker died is resent, and the queue group gives it to a live
   * worker. A worker still running the step is joined, not asked to run it again (the workers'
   * step answers, src/bus/sharedSteps.ts). Default 2.
   */
  serviceAttempts: number;
  /** Deadline of a whole voice rendering (streamed). Default 30 s. */
  voiceTimeoutMs: number;
  /** Extra time an agent request may take beyond the agent's own budget, for the hop. Default 200 ms. */
  agentGraceMs: number;
  /** The critics every reply goes to (each served on conclave.critic.<name>). Default: the roster's. */
  critics: readonly string[];
  /** Deviations from the reference fast sensors (docs/SENSORS.md). Default: none, the reference sensors. */
  sensors: SensorOptions;
  /** Where agents' announced output schemas are looked up. Default: a directory opened on `nc`. */
  directory?: Promise<Pick<AgentDirectory, "outputSchema">>;
  /**
   * How long a memory commit that gets no answer (no worker, none in time) is tried again within
   * its stage, before it is left owed for the session's next turn. Default 2 s.
   */
  memoryCommitRetryMs: number;
  /** Where commits still owed are kept. Default: a backlog opened on `nc` (KV `conclave_sessions`). */
  memoryBacklog?: Promise<MemoryBacklog>;
}
export const defaultRemoteOptions: RemoteOptions = {
  requestTimeoutMs: 5_000,
  serviceAttempts: 2,
  voiceTimeoutMs: 30_000,
  agentGraceMs: 200,
  critics: CRITIC_NAMES,
  sensors: SEED_SENSORS,
  memoryCommitRetryMs: 2_000,
};

/** The turn's work done by workers over NATS request/reply, each call with a deadline. */
export function remoteTurnServices(nc: NatsConnection, options: Partial<RemoteOptions> = {}): TurnServices {
  const settings = { ...defaultRemoteOptions, ...options };
  // Opened once; the first agent answer waits for the workers' roll call.
  const directory = settings.directory ?? AgentDirectory.open(nc);
  directory.catch(() => {}); // a connection closed before the roll call ended: callers see it when they await
  const streams = agentStreams(nc);
  // Opened once; without it (no rights to the bucket) a commit that gets no answer is not kept.
  const backlog = (settings.memoryBacklog ?? MemoryBacklog.open(nc)).catch(() => null);
  // Once open, held here: a session known to owe nothing asks for its memory without waiting on anything.
  let openBacklog: MemoryBacklog | null | undefined;
  void backlog.then((opened) => {
    openBacklog = opened;
  });
  const call = <S extends z.ZodType>(
    subject: string,
    payload: unknown,
    schema: S,
    signal: AbortSignal,
    timeoutMs = settings.requestTimeoutMs,
  ) => requestJson(nc, subject, payload, schema, { timeoutMs, signal });
  /** A council or critic request, resent when its worker does not answer in its share of the deadline. */
  const resent = <S extends z.ZodType>(subject: string, payload: unknown, schema: S, signal: AbortSignal) => {
    const attempts = Math.max(1, settings.serviceAttempts);
    const share = Math.max(1, Math.floor(settings.requestTimeoutMs / attempts));
    return resending(attempts, signal, () => call(subject, payload, schema, signal, share));
  };
  const callAgent: TurnServices["callAgent"] = async (request, signal, { attempts = 1, onStream } = {}) => {
    const unlisten = onStream ? streams.listen(request, onStream) : undefined;
    const asked = unlisten ? { ...request, stream_subject: streams.subject } : request;
    try {
      return await resending(attempts, signal, async () => {
        const reply = await call(
          subjects.agent(request.agent_id),
          asked,
          AgentReply,
          signal,
          request.timeout_ms + settings.agentGraceMs,
        );
        if (request.mode === "respond") await checkOutput(reply);
        return reply;
      });
    } finally {
      unlisten?.();
    }
  };
  /** One commit request; settleCommits makes the session's owed ones first, and tries again when unanswered. */
  const commitEpisode = (episode: Episode, signal: AbortSignal) =>
    call(subjects.memoryCommit, { episode }, MemoryCommitReply, signal);
  /** The runner's own check of an answer, against the schema the agent's workers announced. */
  const checkOutput = async (reply: AgentReply) => {
    const schema = (await directory).outputSchema(reply.agent_id);
    if (!schema) return; // its output is its contribution (checked with the reply), or no live worker announces it
    const checked = schema.safeParse(reply.output);
    if (!checked.success)
      throw new InvalidAgentOutputError(reply.agent_id, "its announced output schema", checked.error);
  };
  return {
    senseFast: senseFastWith(settings.sensors),
    screen: passThroughScreen,
    callAgent,
    deliberate: (input, signal) => deliberateRound(input, callAgent, signal),
    retrieveMemory: async (request, signal) => {
      // A read that memory's model also summarises (a compaction's) waits for the model's deadline too.
      const timeoutMs = settings.requestTimeoutMs + (request.summarise?.deadline_ms ?? 0);
      if (openBacklog?.knownClear(request.session_id))
        return call(subjects.memoryRetrieve, request, MemoryRetrieveReply, signal, timeoutMs);
      // The commits the session still owes go in before its memory is read; if they cannot, it is read as it is.
      const owed = { backlog: await backlog, commit: commitEpisode, signal, retryMs: 0 };
      await settleCommits(request.session_id, null, owed).catch(() => {});
      return call(subjects.memoryRetrieve, request, MemoryRetrieveReply, signal, timeoutMs);
    },
    planWaves: (request, signal) => call(subjects.schedulerPlan, request, PlanWavesReply, signal),
    decide: (request, signal) => resent(subjects.councilDecide, request, CouncilReply, signal),
    safetyCouncil: (request, signal) => call(subjects.councilSafety, request, SafetyCouncilReply, signal),
    renderVoice: async (request, signal, onStream) => {
      let done: { text: string; usage?: Usage } | null = null;
      await requestStream(
        nc,
        subjects.voiceRender,
        request,
        VoiceStreamMessage,
        (message) => {
          if (message.type === "done") done = message;
          else if (message.type === "error")
            throw new RemoteCallError(subjects.voiceRender, "internal", message.message);
          else onStream(message);
        },
        { timeoutMs: settings.voiceTimeoutMs, signal },
      );
      if (!done)
        throw new RemoteCallError(subjects.voiceRender, "internal", "the voice closed its stream without a reply");
      return done;
    },
    runCritics: (request, signal) =>
      collectVerdict(settings.critics, request, (name) => resent(subjects.critic(name), request, CriticReply, signal)),
    commitMemory: async (request, signal) => {
      const reply = await settleCommits(request.episode.session_id, request.episode, {
        backlog: await backlog,
        commit: commitEpisode,
        signal,
        retryMs: settings.memoryCommitRetryMs,
      });
      if (!reply) throw new RemoteCallError(subjects.memoryCommit, "internal", "the memory commit got no reply");
      return reply;
    },
  };
}

/**
 * Asks up to `attempts` times: a timeout is an answer lost (its worker died, or is stuck), and the
 * queue group sends the next attempt to whichever worker of the service is alive. Any other failure,
 * or the caller giving up, ends it at once.
 */
async function resending<T>(attempts: number, signal: AbortSignal, ask: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ask();
    } catch (error) {
      const lost = error instanceof RemoteCallError && error.code === "timeout";
      if (!lost || attempt >= attempts || signal.aborted) throw error;
    }
  }
}

/**
 * The runner's end of agents' named streams: one subscription on a subject of
 * its own; each part goes to the call of its session, turn and agent.
 */
function agentStreams(nc: NatsConnection) {
  const subject = subjects.agentStream(randomUUID().replaceAll("-", ""));
  const listeners = new Map<string, (part: AgentStreamPart) => void>();
  const keyOf = (part: { session_id: string; turn_id: number; agent_id: string }) =>
    `${part.session_id}\u0000${part.turn_id}\u0000${part.agent_id}`;
  let subscribed = false;
  const subscribe = () => {
    subscribed = true;
    nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) return;
        try {
          const part = decodeMessage(msg, AgentStreamPart, `agent stream part on ${msg.subject}`);
          listeners.get(keyOf(part))?.(part);
        } catch {
          // Not a part of any call of ours: nothing to route it to.
        }
      },
    });
  };
  return {
    subject,
    listen(
      request: { session_id: string; turn_id: number; agent_id: string },
      onPart: (part: AgentStreamPart) => void,
    ) {
      if (!subscribed) subscribe();
      const key = keyOf(request);
      listeners.set(key, onPart);
      return () => {
        if (listeners.get(key) === onPart) listeners.delete(key);
      };
    },
  };
}

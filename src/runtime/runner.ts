import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { type Service, type ServiceMsg, Svcm } from "@nats-io/services";
import { type Actor, createActor, type InspectionEvent, type Observer } from "xstate";
import { sessionMachine } from "../../machines/session.ts";
import { defaultTurnPolicy, type TurnPolicy } from "../../machines/turn.ts";
import { decodeJson, encodeJson } from "../bus/codec.ts";
import { errorReply, HandlerError, STATUS_BY_CODE } from "../bus/errors.ts";
import { subjects } from "../bus/subjects.ts";
import { SessionId } from "../contracts/ids.ts";
import { type TurnAck, TurnSubmission } from "../contracts/turn.ts";
import { ensureEventStream } from "../eventlog/streams.ts";
import { EventLogWriter } from "../eventlog/writer.ts";
import { type Logger, silentLogger } from "./log.ts";
import { provideTurn } from "./provideTurn.ts";
import { remoteTurnServices } from "./remoteTurnServices.ts";
import { SessionStore } from "./sessionStore.ts";
import type { TurnServices } from "./turnServices.ts";

export interface RunnerOptions {
  /** Stage deadlines and agent budgets. Default: defaultTurnPolicy. */
  policy?: TurnPolicy;
  /** Where the turn's work is done. Default: workers over NATS. */
  services?: TurnServices;
  log?: Logger;
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
}

/**
 * Hosts session and turn actors. Accepts user turns on
 * `conclave.turn.submit.<session_id>` (a NATS service endpoint shared by all
 * runners in one queue group), reserves each turn's id, acknowledges it, and
 * queues it on the session's actor; the turn's events go to the event log.
 */
export class Runner {
  readonly #nc: NatsConnection;
  readonly #store: SessionStore;
  readonly #writer: EventLogWriter;
  readonly #service: Service;
  readonly #sessions = new Map<string, Actor<typeof sessionMachine>>();
  readonly #log: Logger;
  readonly #inflight = new Set<string>();
  #idle: (() => void) | null = null;

  private constructor(nc: NatsConnection, store: SessionStore, writer: EventLogWriter, service: Service, log: Logger) {
    this.#nc = nc;
    this.#store = store;
    this.#writer = writer;
    this.#service = service;
    this.#log = log;
  }

  static async start(nc: NatsConnection, options: RunnerOptions = {}): Promise<Runner> {
    const log = options.log ?? silentLogger;
    await ensureEventStream(await jetstreamManager(nc));
    const store = await SessionStore.open(nc);
    const writer = new EventLogWriter(jetstream(nc));
    const service = await new Svcm(nc).add({
      name: "conclave-runner",
      version: "0.1.0",
      description: "Conclave turn runner",
    });
    const runner = new Runner(nc, store, writer, service, log);
    const services = options.services ?? remoteTurnServices(nc);
    const policy = options.policy ?? defaultTurnPolicy;
    const turn = provideTurn(services, (context, event) => writer.append(context.session_id, context.turn_id, event));
    const session = sessionMachine.provide({
      actors: { turn },
      actions: {
        turnFinished: (_, output) => runner.#turnFinished(output.session_id, output.turn_id, output.outcome.status),
        turnCrashed: ({ context }, failure) => {
          log.error(`turn ${context.session_id}/${failure.turn_id} crashed: ${String(failure.error)}`);
          runner.#settle(context.session_id, failure.turn_id);
        },
      },
    });
    runner.#createSession = (sessionId) =>
      createActor(session, {
        input: { session_id: sessionId, policy },
        ...(options.inspect ? { inspect: options.inspect } : {}),
      });
    service.addEndpoint("submit", {
      subject: subjects.turnSubmitAll,
      handler: (error, msg) => {
        if (!error) void runner.#submit(msg);
      },
    });
    return runner;
  }

  #createSession: (sessionId: string) => Actor<typeof sessionMachine> = () => {
    throw new Error("runner not started");
  };

  get writer(): EventLogWriter {
    return this.#writer;
  }

  /** Turns accepted and not yet finished. */
  get inflight(): number {
    return this.#inflight.size;
  }

  async #submit(msg: ServiceMsg): Promise<void> {
    const sessionId = msg.subject.slice(subjects.turnSubmit("").length);
    try {
      const session = SessionId.safeParse(sessionId);
      if (!session.success)
        throw new HandlerError(
          "invalid_request",
          `bad session id in subject ${msg.subject}: ${session.error.issues[0]?.message}`,
        );
      const submission = decodeJson(msg.data, TurnSubmission, `turn for session ${sessionId}`);
      const turnId = await this.#store.nextTurnId(sessionId);
      this.#inflight.add(`${sessionId}.${turnId}`);
      const ack: TurnAck = {
        session_id: sessionId,
        turn_id: turnId,
        events_subject: subjects.turnEvents(sessionId, turnId),
      };
      msg.respond(encodeJson(ack));
      this.#session(sessionId).send({
        type: "turn.enqueue",
        turn: {
          turn_id: turnId,
          text: submission.text,
          ...(submission.user_id ? { user_id: submission.user_id } : {}),
        },
      });
      this.#log.info(`turn ${sessionId}/${turnId} accepted`);
    } catch (error) {
      const failure =
        error instanceof HandlerError
          ? error
          : new HandlerError("internal", error instanceof Error ? error.message : String(error));
      const body = errorReply(failure.code, failure.message, failure.issues);
      this.#log.warn(`rejected a turn on ${msg.subject}: ${failure.message}`);
      if (msg.reply) msg.respondError(STATUS_BY_CODE[failure.code], failure.message, encodeJson(body));
      // A fire-and-forget publisher gets the error on the session's error subject.
      else
        this.#nc.publish(
          `conclave.errors.${SessionId.safeParse(sessionId).success ? sessionId : "_"}`,
          encodeJson(body),
        );
    }
  }

  #session(sessionId: string): Actor<typeof sessionMachine> {
    let actor = this.#sessions.get(sessionId);
    if (!actor) {
      actor = this.#createSession(sessionId);
      this.#sessions.set(sessionId, actor);
      actor.start();
    }
    return actor;
  }

  #turnFinished(sessionId: string, turnId: number, status: string): void {
    this.#writer
      .finish(sessionId, turnId)
      .then(
        (count) => this.#log.info(`turn ${sessionId}/${turnId} ${status}: ${count} events stored`),
        (error: unknown) => this.#log.error(String(error)),
      )
      .finally(() => this.#settle(sessionId, turnId));
  }

  #settle(sessionId: string, turnId: number): void {
    this.#inflight.delete(`${sessionId}.${turnId}`);
    if (this.#inflight.size === 0) this.#idle?.();
  }

  /** Resolves once no accepted turn is still running (or after `timeoutMs`). */
  async drain(timeoutMs = 30_000): Promise<boolean> {
    if (this.#inflight.size === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#idle = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** Stops accepting turns, lets running ones finish, then stops the session actors. */
  async stop(timeoutMs = 30_000): Promise<void> {
    await this.#service.stop();
    const drained = await this.drain(timeoutMs);
    if (!drained) this.#log.warn(`stopped with ${this.#inflight.size} turn(s) unfinished`);
    for (const actor of this.#sessions.values()) actor.stop();
    this.#sessions.clear();
  }
}

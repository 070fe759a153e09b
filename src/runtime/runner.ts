import { hostname } from "node:os";
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { type Service, Svcm } from "@nats-io/services";
import { type Actor, createActor, type InspectionEvent, type Observer } from "xstate";
import { sessionMachine } from "../../machines/session.ts";
import { defaultTurnPolicy, type TurnOutput, type TurnPolicy } from "../../machines/turn.ts";
import { RUNNER_CONSUMER, streams, subjects } from "../bus/subjects.ts";
import { WalEntry } from "../contracts/wal.ts";
import { deadLetter } from "../eventlog/deadLetters.ts";
import { readEvents } from "../eventlog/reader.ts";
import {
  ensureDeadLetterStream,
  ensureEventStream,
  ensureTurnWal,
  MAX_TURN_ATTEMPTS,
  WAL_ACK_WAIT_MS,
} from "../eventlog/streams.ts";
import { EventLogWriter } from "../eventlog/writer.ts";
import { acceptSubmission } from "./ingress.ts";
import { withInterceptors } from "./intercepted.ts";
import { defaultInterceptors, type InterceptorChains } from "./interceptors.ts";
import { type Logger, silentLogger } from "./log.ts";
import { SessionOwnership } from "./ownership.ts";
import { provideTurn } from "./provideTurn.ts";
import { remoteTurnServices } from "./remoteTurnServices.ts";
import { type SessionSnapshot, SessionStore } from "./sessionStore.ts";
import type { TurnServices } from "./turnServices.ts";
import { TurnStatusStore } from "./turnStatusStore.ts";

export interface RunnerOptions {
  /** Stage deadlines and agent budgets. Default: defaultTurnPolicy. */
  policy?: TurnPolicy;
  /** Where the turn's work is done. Default: workers over NATS. */
  services?: TurnServices;
  /** Request and response interceptors. Default: prompt-injection guard and PII redaction. */
  interceptors?: InterceptorChains;
  /** Turns that waited longer than this before a runner took them are expired, not run. Default 10 min. */
  turnTtlMs?: number;
  /** A replay checkpoint is saved every this many turns of a session. Default 10. */
  checkpointEvery?: number;
  /** This runner's name in leases and turn status. Default `<host>:<pid>`. */
  id?: string;
  log?: Logger;
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
}

/** A WAL entry this runner holds while its turn waits or runs: kept alive until it is acked. */
interface HeldTurn {
  msg: JsMsg;
  entry: WalEntry;
  heartbeat: NodeJS.Timeout;
}

const decoder = new TextDecoder();
const key = (sessionId: string, turnId: number) => `${sessionId}.${turnId}`;

/**
 * Hosts session and turn actors. Submissions are accepted by the ingress
 * (`conclave.turn.submit.*`, a NATS service shared by all runners) and
 * written to the turn WAL; every runner pulls from the WAL's one shared
 * consumer. A runner takes a turn only for a session it owns (a lease that
 * lapses when it dies), holds the WAL entry while the turn runs, and acks it
 * once the turn's events are stored. A runner that dies mid-turn leaves its
 * entries unacked: they are delivered again and another runner (or this one,
 * restarted) takes the turn over.
 */
export class Runner {
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #sessions: SessionStore;
  readonly #statuses: TurnStatusStore;
  readonly #ownership: SessionOwnership;
  readonly #writer: EventLogWriter;
  readonly #log: Logger;
  readonly #options: Required<Pick<RunnerOptions, "turnTtlMs" | "checkpointEvery">>;
  readonly #actors = new Map<string, Promise<Actor<typeof sessionMachine>>>();
  readonly #held = new Map<string, HeldTurn>();
  #service: Service | null = null;
  #messages: ConsumerMessages | null = null;
  #createSession: (sessionId: string, snapshot: SessionSnapshot | null) => Actor<typeof sessionMachine> = () => {
    throw new Error("runner not started");
  };
  #idle: (() => void) | null = null;

  private constructor(
    nc: NatsConnection,
    deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      sessions: SessionStore;
      statuses: TurnStatusStore;
      ownership: SessionOwnership;
    },
    options: RunnerOptions,
  ) {
    this.#nc = nc;
    this.#js = deps.js;
    this.#jsm = deps.jsm;
    this.#sessions = deps.sessions;
    this.#statuses = deps.statuses;
    this.#ownership = deps.ownership;
    this.#log = options.log ?? silentLogger;
    this.#options = { turnTtlMs: options.turnTtlMs ?? 600_000, checkpointEvery: options.checkpointEvery ?? 10 };
    this.#writer = new EventLogWriter(deps.js, {
      onFenced: (sessionId, turnId) =>
        this.#log.warn(`turn ${sessionId}/${turnId}: another runner is writing it; this one stops writing`),
    });
  }

  static async start(nc: NatsConnection, options: RunnerOptions = {}): Promise<Runner> {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await Promise.all([ensureEventStream(jsm), ensureTurnWal(jsm), ensureDeadLetterStream(jsm)]);
    const id = options.id ?? `${hostname()}:${process.pid}`;
    const [sessions, statuses, ownership] = await Promise.all([
      SessionStore.open(nc),
      TurnStatusStore.open(nc),
      SessionOwnership.open(nc, id),
    ]);
    const runner = new Runner(nc, { js, jsm, sessions, statuses, ownership }, options);
    runner.#prepareSessions(options);
    await runner.#serveIngress();
    await runner.#consumeWal();
    return runner;
  }

  #prepareSessions(options: RunnerOptions): void {
    const services = withInterceptors(
      options.services ?? remoteTurnServices(this.#nc),
      options.interceptors ?? defaultInterceptors(),
    );
    const policy = options.policy ?? defaultTurnPolicy;
    const turn = provideTurn(services, (context, event) =>
      this.#writer.append(context.session_id, context.turn_id, event),
    );
    const session = sessionMachine.provide({
      actors: { turn },
      actions: {
        turnFinished: ({ context }, output) => void this.#turnFinished(context.session_id, output),
        turnCrashed: ({ context }, failure) =>
          void this.#turnCrashed(context.session_id, failure.turn_id, failure.error),
      },
    });
    this.#createSession = (sessionId, snapshot) =>
      createActor(session, {
        input: { session_id: sessionId, policy, ...(snapshot ?? {}) },
        ...(options.inspect ? { inspect: options.inspect } : {}),
      });
  }

  async #serveIngress(): Promise<void> {
    this.#service = await new Svcm(this.#nc).add({
      name: "conclave-runner",
      version: "0.1.0",
      description: "Conclave turn runner",
    });
    const deps = { nc: this.#nc, js: this.#js, sessions: this.#sessions, statuses: this.#statuses, log: this.#log };
    this.#service.addEndpoint("submit", {
      subject: subjects.turnSubmitAll,
      handler: (error, msg) => {
        if (!error) void acceptSubmission(deps, msg);
      },
    });
  }

  async #consumeWal(): Promise<void> {
    const consumer = await this.#js.consumers.get(streams.turns, RUNNER_CONSUMER);
    this.#messages = await consumer.consume({ max_messages: 256 });
    const messages = this.#messages;
    void (async () => {
      for await (const msg of messages) {
        this.#take(msg).catch((error: unknown) => this.#log.error(`WAL entry ${msg.seq}: ${String(error)}`));
      }
    })();
  }

  /** One WAL delivery: run the turn here, leave it to its owner, or settle it as done, expired or invalid. */
  async #take(msg: JsMsg): Promise<void> {
    let entry: WalEntry;
    try {
      entry = WalEntry.parse(JSON.parse(decoder.decode(msg.data)));
    } catch (error) {
      await deadLetter(this.#js, "wal", {
        subject: msg.subject,
        data: msg.data,
        code: "invalid_request",
        reason: String(error),
      });
      // term() without a reason: nats-server 2.9 ignores a +TERM that carries one.
      msg.term();
      return;
    }
    const { session_id: sessionId, turn_id: turnId } = entry;
    const turnKey = key(sessionId, turnId);
    const held = this.#held.get(turnKey);
    if (held) {
      // Delivered again while we hold it (our sign of life came late): keep the newer handle.
      clearInterval(held.heartbeat);
      this.#hold(turnKey, msg, entry);
      return;
    }
    if (!(await this.#ownership.acquire(sessionId))) {
      msg.nak(200); // its owner will get it
      return;
    }
    if (Date.now() - entry.submitted_at > this.#options.turnTtlMs) {
      await this.#statuses.finish(sessionId, turnId, "expired", {
        reason: `waited over ${this.#options.turnTtlMs} ms`,
      });
      await this.#sessions.markDone(sessionId, turnId);
      msg.ack();
      return;
    }
    if (msg.info.deliveryCount === 1) {
      // First delivery: no runner has had it, so it is no takeover. Start the turn now and record it inflight meanwhile.
      this.#hold(turnKey, msg, entry);
      this.#statuses
        .take(sessionId, turnId, this.#ownership.runner, entry.submitted_at, MAX_TURN_ATTEMPTS)
        .catch((error: unknown) => this.#log.warn(`turn ${turnKey}: status not recorded: ${String(error)}`));
      await this.#enqueue(entry);
      return;
    }
    const { before, taken, poison } = await this.#statuses.take(
      sessionId,
      turnId,
      this.#ownership.runner,
      entry.submitted_at,
      MAX_TURN_ATTEMPTS,
    );
    if (poison) {
      await this.#poison(msg.subject, msg.data, entry);
      msg.term();
      return;
    }
    if (!taken) {
      msg.ack(); // already done, failed or expired: a late duplicate delivery
      return;
    }
    this.#hold(turnKey, msg, entry);
    // Delivered again: a runner may have started it and died (its status write may not even have landed).
    let lastStreamSeq = 0;
    const stored = await readEvents(this.#js, this.#jsm, sessionId, turnId, {
      onStreamSeq: (seq) => {
        lastStreamSeq = Math.max(lastStreamSeq, seq);
      },
    });
    if (stored.some((event) => event.kind === "TURN_COMPLETED")) {
      await this.#settle(sessionId, turnId, "done", "completed before the takeover");
      return;
    }
    this.#writer.open(sessionId, turnId, stored, lastStreamSeq);
    if (stored.length > 0) {
      const attempt = Math.max(2, (before?.attempts ?? 1) + 1);
      this.#writer.append(sessionId, turnId, {
        kind: "TURN_RESUMED",
        payload: {
          attempt,
          after_seq: stored.at(-1)?.seq ?? -1,
          ...(before?.runner ? { previous_runner: before.runner } : {}),
        },
      });
      this.#log.warn(`turn ${turnKey} taken over from ${before?.runner ?? "a lost runner"} (attempt ${attempt})`);
    }
    await this.#enqueue(entry);
  }

  /** Hands a turn to its session's actor (and, for `on_busy: interrupt`, stops the running one first). */
  async #enqueue(entry: WalEntry): Promise<void> {
    const session = await this.#session(entry.session_id);
    if (entry.on_busy === "interrupt") session.send({ type: "turn.interrupt", by_turn_id: entry.turn_id });
    session.send({
      type: "turn.enqueue",
      turn: { turn_id: entry.turn_id, text: entry.text, ...(entry.user_id ? { user_id: entry.user_id } : {}) },
    });
  }

  #hold(turnKey: string, msg: JsMsg, entry: WalEntry): void {
    const heartbeat = setInterval(() => msg.working(), WAL_ACK_WAIT_MS / 3);
    heartbeat.unref();
    this.#held.set(turnKey, { msg, entry, heartbeat });
  }

  #session(sessionId: string): Promise<Actor<typeof sessionMachine>> {
    let actor = this.#actors.get(sessionId);
    if (!actor) {
      actor = this.#sessions.snapshot(sessionId).then((snapshot) => {
        const created = this.#createSession(sessionId, snapshot);
        created.start();
        return created;
      });
      this.#actors.set(sessionId, actor);
    }
    return actor;
  }

  async #turnFinished(sessionId: string, output: TurnOutput): Promise<void> {
    const turnKey = key(sessionId, output.turn_id);
    // The session is free for `on_busy: reject` as soon as the turn is over, not once its log is flushed.
    const markedDone = this.#sessions.markDone(sessionId, output.turn_id).catch(() => {});
    try {
      const count = await this.#writer.finish(sessionId, output.turn_id);
      await markedDone;
      const actor = await this.#session(sessionId);
      const { turns_completed, last_turn_id } = actor.getSnapshot().context;
      const snapshot: SessionSnapshot = {
        turns_completed,
        last_turn_id: Math.max(last_turn_id, output.turn_id),
        modulators: output.modulators,
        stance: output.stance,
      };
      await Promise.all([
        this.#sessions.saveSnapshot(sessionId, snapshot),
        snapshot.turns_completed % this.#options.checkpointEvery === 0
          ? this.#sessions.saveCheckpoint(sessionId, { through_turn_id: output.turn_id, snapshot })
          : undefined,
      ]);
      await this.#settle(sessionId, output.turn_id, "done", output.outcome.status, undefined, false);
      this.#log.info(`turn ${turnKey} ${output.outcome.status}: ${count} events stored`);
    } catch (error) {
      // Not acked: the entry is delivered again and the turn resumed once the log can be written.
      this.#release(turnKey, "nak");
      this.#log.error(`turn ${turnKey}: ${String(error)}`);
    }
  }

  async #turnCrashed(sessionId: string, turnId: number, error: unknown): Promise<void> {
    this.#log.error(`turn ${key(sessionId, turnId)} crashed: ${String(error)}`);
    this.#writer.abandon(sessionId, turnId);
    const held = this.#held.get(key(sessionId, turnId));
    if (held) {
      await deadLetter(this.#js, "turn", {
        subject: held.msg.subject,
        data: held.msg.data,
        code: "internal",
        reason: String(error),
      });
    }
    await this.#settle(sessionId, turnId, "failed", undefined, String(error));
  }

  /** Records the turn's final status, marks it done for the session, and acks its WAL entry. */
  async #settle(
    sessionId: string,
    turnId: number,
    status: "done" | "failed",
    outcome?: string,
    reason?: string,
    /** False when the caller already marked the session's turn done. */
    markDone = true,
  ): Promise<void> {
    await Promise.all([
      this.#statuses.finish(sessionId, turnId, status, {
        ...(outcome ? { outcome } : {}),
        ...(reason ? { reason } : {}),
      }),
      markDone ? this.#sessions.markDone(sessionId, turnId) : undefined,
    ]);
    this.#release(key(sessionId, turnId), "ack");
  }

  #release(turnKey: string, how: "ack" | "nak"): void {
    const held = this.#held.get(turnKey);
    if (!held) return;
    clearInterval(held.heartbeat);
    this.#held.delete(turnKey);
    if (how === "ack") held.msg.ack();
    else held.msg.nak(1_000);
    if (this.#held.size === 0) this.#idle?.();
  }

  /**
   * A poison turn: runners started it MAX_TURN_ATTEMPTS times and none
   * finished it (each died on it). It is failed and kept as a dead letter, and
   * never runs again.
   */
  async #poison(subject: string, data: Uint8Array, entry: WalEntry): Promise<void> {
    const reason = `poison: started ${MAX_TURN_ATTEMPTS} times without finishing`;
    await deadLetter(this.#js, "poison", { subject, data, code: "internal", reason });
    await this.#statuses.finish(entry.session_id, entry.turn_id, "failed", { reason });
    await this.#sessions.markDone(entry.session_id, entry.turn_id);
    this.#log.warn(`turn ${key(entry.session_id, entry.turn_id)} is poison: moved to the dead-letter stream`);
  }

  /** Resolves once this runner holds no turn (or after `timeoutMs`). */
  async drain(timeoutMs = 30_000): Promise<boolean> {
    if (this.#held.size === 0) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#idle = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** Stops taking turns, lets those it holds finish, hands back the rest, then releases its sessions. */
  async stop(timeoutMs = 30_000): Promise<void> {
    await this.#service?.stop();
    await this.#messages?.close();
    const drained = await this.drain(timeoutMs);
    if (!drained) this.#log.warn(`stopped with ${this.#held.size} turn(s) unfinished: handed back to the WAL`);
    for (const turnKey of [...this.#held.keys()]) this.#release(turnKey, "nak");
    for (const actor of this.#actors.values()) (await actor).stop();
    this.#actors.clear();
    await this.#ownership.close();
  }
}

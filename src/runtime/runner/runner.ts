import { hostname } from "node:os";
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Service } from "@nats-io/services";
import { createActor } from "xstate";
import { sessionMachine } from "../../../machines/session.ts";
import { defaultTurnPolicy } from "../../../machines/turn/index.ts";
import { AgentDirectory } from "../../agents/directory.ts";
import { BlackboardStores, blackboardOptionsFromEnv } from "../../blackboard/open.ts";
import { encodeJson } from "../../bus/codec.ts";
import { RUNNER_CONSUMER, streams, subjects } from "../../bus/subjects.ts";
import { TurnCancellations } from "../../bus/turnCancellations.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { TurnCancelled } from "../../contracts/turn.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import { ConclaveError, isConclaveError, messageOf, singleLine } from "../../errors.ts";
import { ensureDeadLetterStream, ensureEventStream, ensureTurnWal, MAX_TURN_ATTEMPTS } from "../../eventlog/streams.ts";
import { EventLogWriter } from "../../eventlog/writer.ts";
import { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { ToolPolicy } from "../../tools/policy.ts";
import { IdempotencyStore } from "../intake/idempotency.ts";
import { serveIntake } from "../intake/service.ts";
import { storedRecordScreen, withInterceptors } from "../interception/intercepted.ts";
import { defaultInterceptors } from "../interception/interceptors.ts";
import { withLedgerDigest } from "../ledgerContext.ts";
import { type Logger, silentLogger, turnFields } from "../log.ts";
import { provideTurn } from "../provideTurn.ts";
import { recipeStartOf } from "../recipeHost/recipeStart.ts";
import { recipeTurnLogic } from "../recipeHost/recipeTurn.ts";
import { SuspensionTimers } from "../recipeHost/suspensionTimers.ts";
import { remoteTurnServices } from "../remoteTurnServices.ts";
import { type SessionSnapshot, SessionStore } from "../sessionStore.ts";
import { ToolGate } from "../toolCalls/toolGate.ts";
import { TurnStatusStore } from "../turnStatusStore.ts";
import { decideDelivery, decideRedelivery, decideTakeover, parseEntry } from "./delivery.ts";
import { SessionLeases } from "./leases.ts";
import type { RunnerOptions } from "./options.ts";
import { type SessionActor, SessionHost } from "./sessionHost.ts";
import { TurnSettlement, turnKey } from "./settlement.ts";
import { readForTakeover } from "./takeover.ts";
import { TurnEnds } from "./turnEnds.ts";
import { TurnOrder } from "./turnOrder.ts";

export type { RecipeRunnerOptions, RunnerOptions } from "./options.ts";

/**
 * Hosts session and turn actors. Its parts, one job each:
 * - intake (`../intake/`): accepts submissions on `conclave.turn.submit.*`
 *   (a NATS service shared by all runners) and writes them to the turn WAL;
 * - delivery (`delivery.ts`): decides what each WAL delivery means;
 * - the ledger (`ledger.ts`): holds WAL entries while their turns run and
 *   writes every turn's end, once;
 * - session hosting (`sessionHost.ts`): the session actors and their saved state;
 * - leases and takeover (`leases.ts`, `takeover.ts`): one runner per session,
 *   and picking up a turn a dead runner left.
 * Every runner pulls from the WAL's one shared consumer, runs turns only for
 * sessions it owns, and acks an entry once the turn's events are stored. A
 * runner that dies mid-turn leaves its entries unacked: they are delivered
 * again and another runner (or this one, restarted) takes the turn over.
 */
export class Runner {
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #statuses: TurnStatusStore;
  readonly #leases: SessionLeases;
  readonly #settlement: TurnSettlement;
  readonly #sessions: SessionHost;
  readonly #order: TurnOrder;
  readonly #writer: EventLogWriter;
  readonly #ends: TurnEnds;
  readonly #log: Logger;
  readonly #options: Required<Pick<RunnerOptions, "turnTtlMs" | "checkpointEvery">>;
  /** Per session, the delivery being handled: the next one of the session waits for it. */
  readonly #delivering = new Map<string, Promise<void>>();
  #service: Service | null = null;
  #cancellations: TurnCancellations | null = null;
  #timers: SuspensionTimers | null = null;
  readonly #blackboards: BlackboardStores;
  /** The agents live workers announce: shared by the agent calls' output checks and the recipe intake. */
  readonly #directory: Promise<AgentDirectory>;
  /** Where workers ask for their agents' tool calls. */
  readonly #tools: ToolGate;
  /** The sessions' truth and task ledgers (agents get their digest; clients read and write them). */
  readonly #ledgers: LedgerStore;
  #messages: ConsumerMessages | null = null;

  private constructor(
    nc: NatsConnection,
    deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      store: SessionStore;
      statuses: TurnStatusStore;
      leases: SessionLeases;
      ledgers: LedgerStore;
    },
    options: RunnerOptions,
  ) {
    this.#nc = nc;
    this.#js = deps.js;
    this.#jsm = deps.jsm;
    this.#statuses = deps.statuses;
    this.#leases = deps.leases;
    this.#ledgers = deps.ledgers;
    this.#log = options.log ?? silentLogger;
    this.#options = { turnTtlMs: options.turnTtlMs ?? 600_000, checkpointEvery: options.checkpointEvery ?? 10 };
    this.#writer = new EventLogWriter(deps.js, {
      onFenced: (sessionId, turnId) =>
        this.#log.warn(
          `turn ${turnKey(sessionId, turnId)}: another runner is writing it; this one stops writing`,
          turnFields(sessionId, turnId),
        ),
    });
    this.#settlement = new TurnSettlement({
      js: deps.js,
      statuses: deps.statuses,
      sessions: deps.store,
      log: this.#log,
    });
    this.#blackboards = new BlackboardStores({ nc, ...blackboardOptionsFromEnv(), ...options.recipes?.blackboard });
    this.#directory = AgentDirectory.open(nc, {
      onInvalid: (message) => this.#log.warn(`ignored an agent announcement: ${singleLine(message)}`),
    });
    this.#directory.catch(() => {}); // a connection closed before the roll call ended: users see it when they await
    this.#tools = new ToolGate(nc, this.#directory);
    this.#sessions = new SessionHost(this.#sessionFactory(options), deps.store, this.#log);
    this.#order = new TurnOrder({ store: deps.store, statuses: deps.statuses, log: this.#log });
    this.#ends = new TurnEnds({
      writer: this.#writer,
      sessions: this.#sessions,
      settlement: this.#settlement,
      order: this.#order,
      log: this.#log,
      checkpointEvery: this.#options.checkpointEvery,
      timers: () => this.#timers,
    });
  }

  static async start(nc: NatsConnection, options: RunnerOptions = {}): Promise<Runner> {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await Promise.all([ensureEventStream(jsm), ensureTurnWal(jsm), ensureDeadLetterStream(jsm)]);
    const id = options.id ?? `${hostname()}:${process.pid}`;
    const log = options.log ?? silentLogger;
    const [store, statuses, leases, idempotency, ledgers] = await Promise.all([
      SessionStore.open(nc),
      TurnStatusStore.open(nc),
      SessionLeases.open(nc, id),
      IdempotencyStore.open(nc, id),
      LedgerStore.open(nc, {
        onInvalid: (subject, seq) => log.warn(`stored message ${subject} (seq ${seq}) is not a ledger event: skipped`),
        onConflict: (session, attempt) =>
          log.debug(`ledger write decided again: another landed first (attempt ${attempt})`, { session_id: session }),
      }),
    ]);
    const runner = new Runner(nc, { js, jsm, store, statuses, leases, ledgers }, options);
    // A cancelled turn running here stops; one not here yet is ended as soon as it arrives.
    runner.#cancellations = new TurnCancellations(nc, ({ session_id, turn_id, reason }) =>
      runner.#sessions.ifRunning(session_id)?.send({ type: "turn.cancel", turn_id, reason }),
    );
    runner.#timers = await SuspensionTimers.start(nc, { js, statuses, log: runner.#log });
    // Agents run on workers unless the runner was given in-process services: then recipes' agents are not checked,
    // and it answers no roster request (`conclave agents` falls back to calling the workers' roll).
    const directory = options.services ? undefined : runner.#directory;
    runner.#service = await serveIntake(nc, {
      nc,
      js,
      jsm,
      sessions: store,
      statuses,
      idempotency,
      timers: runner.#timers,
      ledgers,
      log: runner.#log,
      recipes: {
        logicHandlers: Object.keys(options.recipes?.logicHandlers ?? {}),
        ...(directory
          ? { liveAgents: async () => new Set((await directory).roster().map((manifest) => manifest.id)) }
          : {}),
      },
      ...(directory ? { roster: { directory, runner: leases.runner, log: runner.#log } } : {}),
    });
    await runner.#consumeWal();
    return runner;
  }

  /** The session machine with its turns run by `services` and their ends reported back here. */
  #sessionFactory(options: RunnerOptions) {
    const chains = options.interceptors ?? defaultInterceptors();
    const services = withInterceptors(
      withLedgerDigest(
        options.services ?? remoteTurnServices(this.#nc, { directory: this.#directory }),
        this.#ledgers,
        this.#log,
      ),
      chains,
    );
    const stored = storedRecordScreen(chains);
    const record = (context: { session_id: string; turn_id: number }, event: Parameters<typeof stored>[1]) =>
      this.#writer.append(context.session_id, context.turn_id, stored(context, event));
    const turn = provideTurn(services, record);
    const recipeTurn = recipeTurnLogic({
      services,
      stores: this.#blackboards,
      logicHandlers: options.recipes?.logicHandlers ?? {},
      nodeTimeoutMs: options.recipes?.nodeTimeoutMs ?? 60_000,
      tools: {
        gate: this.#tools,
        directory: this.#directory,
        policy: ToolPolicy.parse(options.recipes?.toolPolicy ?? {}),
        ...(options.recipes?.toolTimeoutMs !== undefined ? { timeoutMs: options.recipes.toolTimeoutMs } : {}),
      },
      record,
      flush: (turn) => this.#writer.flushed(turn.session_id, turn.turn_id),
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    const session = sessionMachine.provide({
      actors: { turn, recipeTurn },
      actions: {
        turnSuspended: ({ context }, output) =>
          void this.#ends.suspended(context.session_id, output, {
            turns_completed: context.turns_completed,
            last_turn_id: context.last_turn_id,
            modulators: context.modulators,
            stance: context.stance,
          }),
        // Runs after the session's assign: its context already counts this turn, so the snapshot is taken now,
        // in turn order, not after the awaits that follow.
        turnFinished: ({ context }, output) =>
          void this.#ends.finished(context.session_id, output, {
            turns_completed: context.turns_completed,
            last_turn_id: context.last_turn_id,
            modulators: output.modulators,
            stance: output.stance,
          }),
        turnCrashed: ({ context }, failure) =>
          void this.#ends.crashed(context.session_id, failure.turn_id, failure.error),
      },
    });
    const policy = options.policy ?? defaultTurnPolicy;
    return (sessionId: string, snapshot: SessionSnapshot | null) =>
      createActor(session, {
        input: { session_id: sessionId, policy, ...(snapshot ?? {}) },
        ...(options.inspect ? { inspect: options.inspect } : {}),
      });
  }

  async #consumeWal(): Promise<void> {
    const consumer = await this.#js.consumers.get(streams.turns, RUNNER_CONSUMER);
    this.#messages = await consumer.consume({ max_messages: 256 });
    const messages = this.#messages;
    void (async () => {
      for await (const msg of messages) this.#inSessionOrder(msg);
    })();
  }

  /**
   * Handles deliveries of one session one after another, in the order they
   * arrive (the WAL's order for the session), and those of different
   * sessions at once: two turns of a session taken concurrently could reach
   * its actor in either order.
   */
  #inSessionOrder(msg: JsMsg): void {
    const session = msg.subject.slice(subjects.wal("").length);
    const previous = this.#delivering.get(session);
    const handled = (previous ?? Promise.resolve())
      .then(() => this.#take(msg))
      .catch((error: unknown) => this.#deliveryFailed(msg, error));
    this.#delivering.set(session, handled);
    void handled.then(() => {
      if (this.#delivering.get(session) === handled) this.#delivering.delete(session);
    });
  }

  /** One WAL delivery: run the turn here, leave it to its owner, or settle it as done, expired or invalid. */
  async #take(msg: JsMsg): Promise<void> {
    const parsed = parseEntry(msg.data);
    if (!parsed.ok) return this.#settlement.rejectInvalid(msg, parsed.reason);
    const entry = parsed.entry;
    const { session_id: sessionId, turn_id: turnId } = entry;
    const heldHere = this.#settlement.holds(sessionId, turnId);
    const action = decideDelivery({
      turnId,
      deliveryCount: msg.info.deliveryCount,
      heldHere,
      heldOtherEntry: heldHere && this.#settlement.heldSeq(sessionId, turnId) !== msg.seq,
      ownsSession: heldHere || (await this.#leases.acquire(sessionId)),
      expired: Date.now() - entry.submitted_at > this.#options.turnTtlMs,
      finishedHere: this.#sessions.finishedHere(sessionId, turnId),
    });
    switch (action.kind) {
      case "refresh_hold":
        return this.#settlement.hold(msg, entry);
      case "drop_stale":
        msg.ack();
        return;
      case "defer_to_owner":
        msg.nak(200); // its owner will get it
        return;
      case "expire":
        return this.#settlement.settle(
          sessionId,
          turnId,
          { status: "expired", reason: `waited over ${this.#options.turnTtlMs} ms` },
          { msg },
        );
      case "reset_session": {
        const status = (await this.#statuses.get(sessionId, turnId))?.status;
        if (status === "done" || status === "failed" || status === "expired") {
          msg.ack(); // it did end: a late copy (its first ack was lost), nothing to reset
          return;
        }
        this.#log.warn(
          `turn ${turnKey(sessionId, turnId)} ran here but never ended: restoring its session`,
          turnFields(sessionId, turnId),
        );
        this.#ends.resetSession(sessionId);
        msg.nak(0);
        return;
      }
      case "start": {
        if (!(await this.#order.mayRun(sessionId, turnId))) return this.#waitForEarlierTurn(msg);
        this.#settlement.hold(msg, entry);
        // A suspended recipe run answered: it goes on after what its log holds.
        const stored = entry.resume ? await readForTakeover(this.#js, this.#jsm, sessionId, turnId) : undefined;
        if (stored) this.#writer.open(sessionId, turnId, stored.events, stored.lastStreamSeq);
        // First delivery: record it inflight meanwhile rather than before (one round trip off the turn's start).
        this.#statuses
          .take(sessionId, turnId, this.#leases.runner, entry.submitted_at, MAX_TURN_ATTEMPTS, entry.suspension_seq)
          .catch((error: unknown) =>
            this.#log.warn(
              `turn ${turnKey(sessionId, turnId)}: status not recorded: ${messageOf(error)}`,
              turnFields(sessionId, turnId),
            ),
          );
        return this.#enqueue(entry, undefined, stored?.events);
      }
      case "check_status":
        if (!(await this.#order.mayRun(sessionId, turnId))) return this.#waitForEarlierTurn(msg);
        return this.#redelivered(msg, entry);
    }
  }

  /** A delivery after the first: poison, a late duplicate, or a takeover. */
  async #redelivered(msg: JsMsg, entry: WalEntry): Promise<void> {
    const { session_id: sessionId, turn_id: turnId } = entry;
    const take = await this.#statuses.take(
      sessionId,
      turnId,
      this.#leases.runner,
      entry.submitted_at,
      MAX_TURN_ATTEMPTS,
      entry.suspension_seq,
    );
    const action = decideRedelivery(take);
    if (action.kind === "poison") {
      const reason = `poison: started ${MAX_TURN_ATTEMPTS} times without finishing`;
      this.#log.warn(
        `turn ${turnKey(sessionId, turnId)} is poison: moved to the dead-letter stream`,
        turnFields(sessionId, turnId),
      );
      return this.#settlement.settle(
        sessionId,
        turnId,
        { status: "failed", reason, deadLetter: { source: "poison", code: "internal" }, terminate: true },
        { msg },
      );
    }
    if (action.kind === "already_settled") {
      msg.ack();
      return;
    }
    this.#settlement.hold(msg, entry);
    const stored = await readForTakeover(this.#js, this.#jsm, sessionId, turnId);
    const takeover = decideTakeover({
      ...stored,
      unstartedResume: entry.resume !== undefined && take.before?.status === "pending" && take.before.attempts === 0,
    });
    if (takeover.kind === "settle_done") {
      return this.#settlement.settle(sessionId, turnId, { status: "done", outcome: "completed before the takeover" });
    }
    this.#writer.open(sessionId, turnId, stored.events, stored.lastStreamSeq);
    if (takeover.kind === "resume") {
      this.#writer.append(sessionId, turnId, {
        kind: "TURN_RESUMED",
        payload: {
          attempt: action.attempt,
          after_seq: takeover.afterSeq,
          ...(action.previousRunner ? { previous_runner: action.previousRunner } : {}),
        },
      });
      this.#log.warn(
        `turn ${turnKey(sessionId, turnId)} taken over from ${action.previousRunner ?? "a lost runner"} (attempt ${action.attempt})`,
        turnFields(sessionId, turnId),
      );
    }
    await this.#enqueue(entry, take.before?.cancel_reason, stored.events);
  }

  /** An earlier turn of the session has still to reach this runner: this one is delivered again shortly. */
  #waitForEarlierTurn(msg: JsMsg): void {
    msg.nak(200);
  }

  /** Hands a turn to its session's actor (and, for `on_busy: interrupt`, stops the running one first). */
  async #enqueue(entry: WalEntry, cancelReason?: string, stored: readonly EngineEvent[] = []): Promise<void> {
    let session: SessionActor;
    try {
      session = await this.#sessions.get(entry.session_id);
    } catch (error) {
      // A stored value that fails its schema will fail the same way next time: end the turn, visibly.
      if (isConclaveError(error, "corrupt_value")) return this.#ends.failUnrunnable(entry, error);
      throw error;
    }
    if (entry.on_busy === "interrupt") this.#interrupt(session, entry.session_id, entry.turn_id);
    const cancelled = cancelReason ?? this.#cancellations?.reasonFor(entry.session_id, entry.turn_id);
    const recipe = recipeStartOf(entry, stored);
    if (entry.resume && !recipe) {
      const error = new ConclaveError("corrupt_value", "a resumed run whose log holds no RECIPE_STARTED");
      return this.#ends.failUnrunnable(entry, error);
    }
    session.send({
      type: "turn.enqueue",
      turn: {
        turn_id: entry.turn_id,
        text: entry.text,
        ...(entry.user_id ? { user_id: entry.user_id } : {}),
        ...(cancelled !== undefined ? { cancelled } : {}),
        ...(recipe ? { recipe } : {}),
      },
    });
    this.#order.arrived(entry.session_id, entry.turn_id);
  }

  /**
   * Double-texting `interrupt`: the running turn (if older) stops here, and
   * the workers stop its calls, told as for a cancellation
   * (`conclave.turn.cancelled`; runners find that turn already ended).
   */
  #interrupt(session: SessionActor, sessionId: string, byTurnId: number): void {
    const running = session.getSnapshot().context.current?.turn_id;
    session.send({ type: "turn.interrupt", by_turn_id: byTurnId });
    if (running === undefined || running >= byTurnId) return;
    const stop: TurnCancelled = { session_id: sessionId, turn_id: running, reason: `interrupted by turn ${byTurnId}` };
    try {
      this.#nc.publish(subjects.turnCancelled, encodeJson(stop));
    } catch {
      // The connection is closing: the workers' calls end at their own deadlines.
    }
  }

  /** A delivery that could not be handled (NATS down, a store unreadable): handed back, to be tried again. */
  #deliveryFailed(msg: JsMsg, error: unknown): void {
    this.#log.error(`WAL entry ${msg.seq}: ${messageOf(error)}; handed back to be delivered again`);
    const parsed = parseEntry(msg.data);
    if (parsed.ok && this.#settlement.holds(parsed.entry.session_id, parsed.entry.turn_id)) {
      this.#settlement.handBack(parsed.entry.session_id, parsed.entry.turn_id);
    } else {
      msg.nak(1_000);
    }
  }

  /** Resolves once this runner holds no turn (or after `timeoutMs`). */
  drain(timeoutMs = 30_000): Promise<boolean> {
    return this.#settlement.drain(timeoutMs);
  }

  /** Stops taking turns, lets those it holds finish, hands back the rest, then releases its sessions. */
  async stop(timeoutMs = 30_000): Promise<void> {
    await this.#service?.stop();
    this.#cancellations?.close();
    await this.#messages?.close();
    const drained = await this.drain(timeoutMs);
    if (!drained) this.#log.warn(`stopped with ${this.#settlement.size} turn(s) unfinished: handed back to the WAL`);
    this.#settlement.handBackAll();
    this.#sessions.stopAll();
    this.#timers?.close();
    this.#tools.close();
    void this.#directory.then(
      (directory) => directory.close(),
      () => {},
    );
    await this.#blackboards.close();
    await this.#leases.close();
  }
}

import type { JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { AgentDirectory } from "../../agents/directory.ts";
import type { Service } from "../../bus/service.ts";
import { TurnCancellations } from "../../bus/turnCancellations.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { turnLabel } from "../../contracts/turnKey.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import { ConclaveError, isConclaveError, messageOf } from "../../errors.ts";
import { walTurnIds } from "../../eventlog/turnWal.ts";
import { EventLogWriter } from "../../eventlog/writer.ts";
import { type Logger, silentLogger, turnFields } from "../../telemetry/log.ts";
import type { RecipeHost } from "../recipeHost/recipeHost.ts";
import { recipeStartOf } from "../recipeHost/recipeStart.ts";
import { TurnTenants } from "../turnServices/knowledgeRetrieval.ts";
import type { Admission } from "./admission.ts";
import { attemptedBefore, decideDelivery, parseEntry, type TakeResult } from "./delivery.ts";
import type { IntakeBacklog } from "./intakeBacklog.ts";
import { interruptRunningTurn } from "./interrupt.ts";
import type { SessionLeases } from "./leases.ts";
import type { RunnerOptions } from "./options.ts";
import { PartitionOwnership } from "./partitions.ts";
import { openRunnerParts, type RunnerParts } from "./parts.ts";
import { type SessionActorDeps, sessionActors } from "./sessionActors.ts";
import { followErasures } from "./sessionErasures.ts";
import { type SessionActor, SessionHost } from "./sessionHost.ts";
import { TurnSettlement } from "./settlement.ts";
import {
  type RedeliveryDeps,
  readForTakeover,
  recordTaken,
  resumedPipelineTurn,
  TurnsTakenHere,
  takeRedelivered,
  takeStatus,
} from "./takeover.ts";
import { TurnEnds } from "./turnEnds.ts";
import { TurnOrder } from "./turnOrder.ts";

export type { RecipeRunnerOptions, RunnerOptions } from "./options.ts";

/** A session kept past its partition's move is said every this many hand-over tries (100 ms apart: 5 s). */
const HAND_OVER_SAID_EVERY = 50;

/**
 * Hosts session and turn actors. Its parts, one job each:
 * - intake (`../intake/`): accepts submissions on `conclave.turn.submit.*` (a NATS service shared by all
 *   runners) and writes them to the turn WAL;
 * - partitions (`partitions.ts`): the WAL partitions this runner pulls, its share among the live runners;
 * - delivery (`delivery.ts`): decides what each WAL delivery means;
 * - the settlement (`settlement.ts`): holds WAL entries while their turns run and writes every turn's end, once;
 * - what it is built from (`parts.ts`): the stores and the intake, opened before it takes a turn;
 * - session hosting (`sessionHost.ts`): the session actors and their saved state;
 * - leases and takeover (`leases.ts`, `takeover.ts`): one runner per session, and picking up a turn a dead
 *   runner left;
 * - recipe hosting (`../recipeHost/recipeHost.ts`): blackboards, the tool gate, suspension timers and the
 *   recipe turns' actor.
 * It runs turns only for sessions it owns, and acks an entry once the turn's events are stored. A runner that
 * dies mid-turn leaves its entries unacked: its partitions go to the survivors, which take its turns over.
 */
export class Runner {
  readonly #nc: NatsConnection;
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
  /** Sessions of partitions gone elsewhere still kept here, with how many hand-overs they have waited. */
  readonly #handOverTries = new Map<string, number>();
  /** Each running turn's tenant, from its WAL entry: whose knowledge collections its agents may read. */
  readonly #tenants = new TurnTenants();
  readonly #intake: Service;
  readonly #cancellations: TurnCancellations;
  readonly #stopFollowingErasures: () => void;
  readonly #backlog: IntakeBacklog;
  readonly #stopFollowingEnds: () => void;
  readonly #recipes: RecipeHost;
  /** The agents live workers announce, shared by the sessions' turns, recipes and the intake: closed here. */
  readonly #directory: Promise<AgentDirectory>;
  readonly #partitions: PartitionOwnership;
  readonly #admission: Admission;
  /** What taking a turn (first or again) needs: the stores, this runner's name, the turns it took before. */
  readonly #takers: RedeliveryDeps;
  /** The scheduler, council, voice and critics, when this runner hosts them: their actors stop with it. */
  readonly #cognition: RunnerParts["cognition"];

  private constructor(nc: NatsConnection, parts: RunnerParts, options: RunnerOptions) {
    this.#nc = nc;
    this.#leases = parts.leases;
    this.#directory = parts.directory;
    this.#recipes = parts.recipes;
    this.#cognition = parts.cognition;
    this.#intake = parts.intake;
    this.#admission = parts.admission;
    this.#backlog = parts.backlog;
    this.#stopFollowingEnds = parts.backlog.followEnds(nc);
    this.#log = options.log ?? silentLogger;
    this.#partitions = new PartitionOwnership({
      js: parts.js,
      jsm: parts.jsm,
      partitions: parts.partitions,
      runner: parts.leases.runner,
      log: this.#log,
      onMessage: (msg) => this.#inSessionOrder(msg),
      // Once nothing of it is under way here (held, delivered, saving, restoring); its new owner takes it then.
      handOver: (sessionId) => this.#handOver(sessionId),
    });
    this.#options = { turnTtlMs: options.turnTtlMs ?? 600_000, checkpointEvery: options.checkpointEvery ?? 10 };
    this.#writer = new EventLogWriter(parts.js, parts.eventStreams, {
      live: nc, // stream chunks go out live as they come; the log stores them coalesced
      transport: nc,
      onFenced: (sessionId, turnId) =>
        this.#log.warn(
          `${turnLabel(sessionId, turnId)}: another runner is writing it; this one stops writing`,
          turnFields(sessionId, turnId),
        ),
    });
    this.#settlement = new TurnSettlement({
      js: parts.js,
      nc, // each turn's end is told to workers: the calls still open for it stop
      statuses: parts.statuses,
      sessions: parts.store,
      log: this.#log,
      // A turn that ended or left this runner frees its place: the next waiting turn starts.
      onReleased: (sessionId, turnId) => this.#admission.release(sessionId, turnId),
      ...(parts.trim
        ? { onSettled: (sessionId: string, turnId: number) => void parts.trim?.afterTurn(sessionId, turnId) }
        : {}),
    });
    const takenHere = new TurnsTakenHere();
    this.#takers = {
      js: parts.js,
      jsm: parts.jsm,
      statuses: parts.statuses,
      runner: parts.leases.runner,
      log: this.#log,
      settlement: this.#settlement,
      writer: this.#writer,
      takenHere,
    };
    // The sessions report their turns' ends to #ends, which is made after them (it saves their snapshots):
    // each end is handed on when it happens.
    const ends: SessionActorDeps["ends"] = {
      suspended: (sessionId, output, snapshot) => this.#ends.suspended(sessionId, output, snapshot),
      finished: (sessionId, output, snapshot) => this.#ends.finished(sessionId, output, snapshot),
      crashed: (sessionId, turnId, error) => this.#ends.crashed(sessionId, turnId, error),
    };
    const { directory, ledgers, recipes, cognition } = parts;
    const actors = sessionActors(
      {
        nc,
        directory,
        ledgers,
        log: this.#log,
        writer: this.#writer,
        recipes,
        ends,
        cognition,
        tenants: this.#tenants,
      },
      options,
    );
    this.#sessions = new SessionHost(actors, parts.store, this.#log, {
      ...(options.idleSessionTtlMs !== undefined ? { idleMs: options.idleSessionTtlMs } : {}),
      busy: (sessionId) => this.#delivering.has(sessionId) || this.#settlement.holdsSession(sessionId),
      onEvicted: (sessionId) => this.#letGo(sessionId),
    });
    // Cut off from NATS past its liveness lease: other runners may take its sessions, so it forgets them all.
    this.#leases.whenLapsed(() => {
      for (const sessionId of this.#sessions.live()) this.#ends.resetSession(sessionId);
      this.#settlement.handBackAll();
    });
    this.#order = new TurnOrder({
      store: parts.store,
      statuses: parts.statuses,
      log: this.#log,
      walTurnIds: (sessionId) => walTurnIds(parts.jsm, sessionId, parts.partitions),
    });
    this.#ends = new TurnEnds({
      statuses: parts.statuses,
      writer: this.#writer,
      sessions: this.#sessions,
      settlement: this.#settlement,
      order: this.#order,
      log: this.#log,
      checkpointEvery: this.#options.checkpointEvery,
      timers: parts.recipes.timers,
      admission: this.#admission,
    });
    // A cancelled turn running here stops; one not here yet is ended as soon as it arrives. It listens before the
    // first delivery is handled (the runner takes none until `start` lets it).
    this.#cancellations = new TurnCancellations(nc, ({ session_id, turn_id, reason }) => {
      // A turn still waiting for a place starts now, to end at once as cancelled.
      if (this.#admission.isWaiting(session_id, turn_id)) this.#admission.admitNow(session_id, turn_id);
      this.#sessions.ifRunning(session_id)?.send({ type: "turn.cancel", turn_id, reason });
    });
    // An erased session is forgotten here too: nothing of it outlives the erase in memory.
    this.#stopFollowingErasures = followErasures(nc, (sessionId) => {
      this.#sessions.evict(sessionId);
      this.#recipes.pipelineTools.forget(sessionId);
      this.#letGo(sessionId);
    });
  }

  /**
   * Lets a session of a partition gone elsewhere go once nothing of it is under way here (its new owner
   * takes it then). Tried every 100 ms; one still kept after many tries is said, with what keeps it.
   */
  #handOver(sessionId: string): void {
    if (this.#sessions.evictIfIdle(sessionId)) {
      this.#letGo(sessionId);
      return;
    }
    const tries = (this.#handOverTries.get(sessionId) ?? 0) + 1;
    this.#handOverTries.set(sessionId, tries);
    if (tries % HAND_OVER_SAID_EVERY === 0)
      this.#log.warn(
        `session ${sessionId}: its partition moved, not handed over after ${tries} tries: ${this.#sessions.whyBusy(sessionId) ?? "nothing keeps it"}`,
        { session_id: sessionId },
      );
  }

  /** This runner no longer hosts the session (idle, or erased): its turn order and ownership go too. */
  #letGo(sessionId: string): void {
    this.#handOverTries.delete(sessionId);
    this.#order.forget(sessionId);
    void this.#leases.release(sessionId).catch(() => {});
  }

  /** Opens everything the runner needs (`parts.ts`), builds it, then lets it take the WAL's deliveries. */
  static async start(nc: NatsConnection, options: RunnerOptions = {}): Promise<Runner> {
    const runner = new Runner(nc, await openRunnerParts(nc, options), options);
    await runner.#partitions.start(runner.#leases);
    return runner;
  }

  /**
   * Handles deliveries of one session one after another, in the order they
   * arrive (the WAL's order for the session), and those of different
   * sessions at once: two turns of a session taken concurrently could reach
   * its actor in either order.
   */
  #inSessionOrder(msg: JsMsg): void {
    const session = msg.subject.slice(msg.subject.lastIndexOf(".") + 1); // conclave.wal.<partition>.<session>
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
    if (!parsed.ok && parsed.tooNew) return this.#settlement.leaveForNewer(msg, parsed.tooNew);
    if (!parsed.ok) return this.#settlement.rejectInvalid(msg, parsed.reason);
    const entry = parsed.entry;
    const { session_id: sessionId, turn_id: turnId } = entry;
    this.#backlog.seen(sessionId, turnId); // the intake's count hands it to this runner's own
    const heldHere = this.#settlement.holds(sessionId, turnId);
    const storedAt = Number(msg.timestampNanos / 1_000_000n);
    const action = decideDelivery({
      turnId,
      deliveryCount: msg.info.deliveryCount,
      storedAgoMs: Date.now() - storedAt,
      storedBeforePulled: this.#partitions.storedBeforePulled(sessionId, msg.seq),
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
        return this.#settlement.deferToOwner(msg, sessionId, turnId, () => this.#leases.ownerOf(sessionId));
      case "expire":
        return this.#settlement.settle(
          sessionId,
          turnId,
          { status: "expired", reason: `waited over ${this.#options.turnTtlMs} ms` },
          { msg },
        );
      case "reset_session":
        return this.#ends.ranButNeverEnded(msg, sessionId, turnId);
      case "start":
      case "start_if_unattempted": {
        if (!(await this.#order.mayRun(sessionId, turnId))) return this.#waitForEarlierTurn(msg);
        const checked = action.kind === "start_if_unattempted" ? await takeStatus(this.#takers, entry) : undefined;
        if (checked && attemptedBefore(checked)) return this.#redelivered(msg, entry, checked);
        this.#settlement.hold(msg, entry);
        // A suspended recipe run answered: it goes on after what its log holds.
        const stored = entry.resume
          ? await readForTakeover(this.#takers.js, this.#takers.jsm, sessionId, turnId)
          : undefined;
        if (stored) this.#writer.open(sessionId, turnId, stored.events, stored.lastStreamSeq);
        // It reached this runner: later turns of the session may be taken (admission keeps them in order).
        this.#order.arrived(sessionId, turnId);
        // Waiting for a place does not hold up the session's later deliveries: they are held too, and wait behind it.
        void this.#admitted(entry)
          .then(async (admitted) => {
            if (!admitted) return; // handed back or ended while it waited
            // First delivery: the turn starts, and is recorded inflight meanwhile (`recordTaken`).
            await this.#enqueue(entry, undefined, stored?.events);
            if (!checked) recordTaken(this.#takers, entry);
          })
          .catch((error: unknown) => this.#deliveryFailed(msg, error));
        return;
      }
      case "check_status":
        if (!(await this.#order.mayRun(sessionId, turnId))) return this.#waitForEarlierTurn(msg);
        return this.#redelivered(msg, entry);
    }
  }

  /** A delivery after the first: poison, a late duplicate, or a takeover (`takeover.ts`); a turn taken runs here. */
  async #redelivered(msg: JsMsg, entry: WalEntry, take?: TakeResult): Promise<void> {
    const taken = await takeRedelivered(this.#takers, msg, entry, take);
    // Settled (it had ended, or is poison): later turns of the session wait for it no more.
    if (!taken) return this.#order.arrived(entry.session_id, entry.turn_id);
    // Taken over from a dead runner: late already, it starts at once rather than queue again.
    this.#admission.admitNow(entry.session_id, entry.turn_id, entry.tenant);
    await this.#enqueue(entry, taken.cancelReason, taken.events);
  }

  /**
   * Waits for a place for a turn (`admission.ts`), with TURN_QUEUED in its log meanwhile; one that
   * interrupts its session's running turn starts at once. False: settled or handed back while it waited.
   */
  async #admitted(entry: WalEntry): Promise<boolean> {
    const { session_id: sessionId, turn_id: turnId, tenant } = entry;
    if (entry.on_busy === "interrupt" && this.#sessions.ifRunning(sessionId)?.getSnapshot().context.current) {
      this.#admission.admitNow(sessionId, turnId, tenant);
      return true;
    }
    const { admitted, whenAdmitted } = this.#admission.request(sessionId, turnId, tenant);
    if (admitted.state === "queued") {
      this.#writer.append(sessionId, turnId, { kind: "TURN_QUEUED", payload: { position: admitted.position } });
      this.#log.debug(
        `${turnLabel(sessionId, turnId)} queued at position ${admitted.position}`,
        turnFields(sessionId, turnId),
      );
    }
    return whenAdmitted;
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
    if (entry.on_busy === "interrupt") interruptRunningTurn(this.#nc, session, entry.session_id, entry.turn_id);
    const cancelled = cancelReason ?? this.#cancellations.reasonFor(entry.session_id, entry.turn_id);
    const recipe = recipeStartOf(entry, stored);
    // A pipeline turn suspended for an approval goes on from its log, with the answer (resumedPipelineTurn).
    const resumed = entry.resume && !recipe ? resumedPipelineTurn(entry, stored) : null;
    if (resumed instanceof ConclaveError) return this.#ends.failUnrunnable(entry, resumed);
    if (resumed?.record) this.#writer.append(entry.session_id, entry.turn_id, resumed.record);
    if (resumed && entry.resume) this.#recipes.pipelineTools.answered(entry.session_id, entry.turn_id, entry.resume);
    const { text, user_id: userId, pipeline } = resumed ?? entry;
    this.#tenants.set(entry.session_id, entry.turn_id, entry.tenant);
    session.send({
      type: "turn.enqueue",
      turn: {
        turn_id: entry.turn_id,
        text,
        ...(userId ? { user_id: userId } : {}),
        ...(cancelled !== undefined ? { cancelled } : {}),
        ...(recipe ? { recipe } : {}),
        ...(pipeline && !recipe ? { pipeline } : {}),
      },
    });
    this.#order.arrived(entry.session_id, entry.turn_id);
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
    await this.#intake.stop();
    this.#cancellations.close();
    this.#stopFollowingErasures();
    this.#stopFollowingEnds();
    await this.#partitions.close();
    const drained = await this.drain(timeoutMs);
    if (!drained) this.#log.warn(`stopped with ${this.#settlement.size} turn(s) unfinished: handed back to the WAL`);
    this.#settlement.handBackAll();
    this.#sessions.stopAll();
    this.#cognition?.actors?.stop();
    // What its turns wrote is stored before their sessions go: a runner taking one over reads all of it.
    await this.#writer.settled();
    void this.#directory.then(
      (directory) => directory.close(),
      () => {},
    );
    await this.#recipes.stop();
    await this.#leases.close();
  }
}

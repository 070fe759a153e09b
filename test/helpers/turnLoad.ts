/**
 * A steady load of turns and the accounting of every acked turn afterwards, shared by the runs that
 * put a fault under load: test/helpers/clusterFaults.ts (NATS nodes killed or cut off) and
 * test/runtime/membership.test.ts (runners joining, stopping, dying). Several sessions converse
 * through the client, turn after turn, each turn with an idempotency key; the run waits on the
 * number of turns finished (`progress`), never on a guessed delay. The accounting reads each
 * session's log back in stream order and counts, from the events:
 * - lost: an acked turn without exactly one TURN_COMPLETED and status `done`;
 * - run twice: an acked turn with more than one TURN_COMPLETED;
 * - turn-order violations: a turn's first TURN_STARTED stored before the previous turn's TURN_COMPLETED.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { eventStreamOfSubject, subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, TurnTimeoutError } from "../../src/client/index.ts";
import { parseStoredEvents } from "../../src/contracts/eventBatch.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import type { TurnStatusRecord } from "../../src/contracts/wal.ts";
import { orderedConsumer, releaseConsumer } from "../../src/eventlog/consumers.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { settledStatus } from "./turnStatus.ts";
import { sleep } from "./wait.ts";

export interface TurnLoadOptions {
  /** The clients the sessions submit through, session `i` through `clients[i % length]`. */
  clients: readonly ConclaveClient[];
  /** Sessions conversing at once. */
  sessions: number;
  /** Prefix of the session ids: `<label>-<i>` (`<label>-<i>-<g>` when sessions are renewed). */
  label: string;
  /** A session's pause between its turns. */
  thinkMs: number;
  /** How long a client follows one turn before it counts the follow as timed out. */
  followTimeoutMs: number;
  /** The load must have ended within this long. */
  runBoundMs: number;
  /**
   * Turns a session has before its place is taken by a new session (`<label>-<i>-<g+1>`). Default: no
   * end, one session per place for the whole run. New sessions let runners started mid-load own some.
   */
  turnsPerSession?: number;
}

/** A load under way. */
export interface TurnLoad {
  readonly started: number;
  /** Every acked turn, in the order of the acks. */
  readonly acks: TurnAck[];
  /** Follows that ended in an error other than a timeout. */
  readonly failures: string[];
  /** Follows that gave up (TurnTimeoutError), with when each turn was submitted. */
  readonly stalled: Map<string, number>;
  /** When each acked turn (`session/turn`) was acked. */
  readonly submittedAt: Map<string, number>;
  /** Turns acked and not yet finished. */
  readonly inFlight: Set<string>;
  /** Turns finished so far (followed to their end, or given up on). */
  finished(): number;
  /** Resolves once `more` turns have finished from now; rejects if the load fails first. */
  progress(more: number): Promise<void>;
  /** Lets each session end its current turn, then resolves once every session has stopped. */
  stop(): Promise<void>;
}

/** Starts `options.sessions` conversations, turn after turn, until `stop()`. */
export function startTurnLoad(options: TurnLoadOptions): TurnLoad {
  const { clients, sessions, label, thinkMs, followTimeoutMs, runBoundMs, turnsPerSession = Infinity } = options;
  const started = Date.now();
  const acks: TurnAck[] = [];
  const failures: string[] = [];
  const stalled = new Map<string, number>();
  const submittedAt = new Map<string, number>();
  const inFlight = new Set<string>();
  let finished = 0;
  let stopping = false;
  const waiters: { count: number; resolve: () => void }[] = [];
  const progressed = () => {
    finished += 1;
    for (const waiter of waiters.filter((w) => finished >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };

  /** One place's conversation, turn after turn until the run stops. */
  const converse = async (place: number, client: ConclaveClient) => {
    for (let turn = 1; !stopping; turn++) {
      const generation = Math.floor((turn - 1) / turnsPerSession);
      const session = Number.isFinite(turnsPerSession) ? `${label}-${place}-${generation}` : `${label}-${place}`;
      const turnInSession = turn - generation * (Number.isFinite(turnsPerSession) ? turnsPerSession : 0);
      let ack: TurnAck | null = null;
      let stream: ReturnType<ConclaveClient["submit"]> | null = null;
      while (!ack) {
        if (Date.now() - started > runBoundMs) throw new Error(`${session}: could not submit turn ${turnInSession}`);
        stream = client.submit(session, `How do I plan deadline number ${turnInSession}?`, {
          idempotencyKey: `${session}-${turnInSession}`,
          timeoutMs: followTimeoutMs,
        });
        ack = await stream.ack.catch(() => null);
        // No ack (the server it asked went away): as any client, ask again with the same key.
        if (!ack) await sleep(250);
      }
      const key = `${ack.session_id}/${ack.turn_id}`;
      acks.push(ack);
      submittedAt.set(key, Date.now());
      inFlight.add(key);
      try {
        await stream!.result;
      } catch (error) {
        if (error instanceof TurnTimeoutError) stalled.set(key, submittedAt.get(key)!);
        else failures.push(`${key}: ${String(error)}`);
      }
      inFlight.delete(key);
      progressed();
      if (thinkMs > 0) await sleep(thinkMs);
    }
  };
  const load = Promise.all(Array.from({ length: sessions }, (_, i) => converse(i, clients[i % clients.length]!)));
  load.catch(() => {}); // surfaced by progress() and stop()

  return {
    started,
    acks,
    failures,
    stalled,
    submittedAt,
    inFlight,
    finished: () => finished,
    progress(more) {
      const count = finished + more;
      const reached = new Promise<void>((resolve) => waiters.push({ count, resolve }));
      return Promise.race([reached, load.then(() => reached)]);
    },
    async stop() {
      stopping = true;
      await load;
    },
  };
}

/** What the accounting counts, as every run prints it. */
export interface TurnCounts {
  submitted: number;
  completed: number;
  lost: number;
  /** Turns with more than one TURN_COMPLETED. */
  twice: number;
  /** A turn's first TURN_STARTED stored before the previous turn of its session completed. */
  violations: number;
  /** TURN_RESUMED events: turns taken over from another runner (or taken back). */
  takeovers: number;
  /**
   * Calls a turn's log records more than once: an agent's answer (AGENT_COMPLETED of one agent in one wave),
   * a model step (MODEL_CALL_COMPLETED of one call key), a tool call started (TOOL_CALL_STARTED of one call id).
   */
  callsRepeated: number;
}

/** Every acked turn read back. */
export interface TurnAccount {
  counts: TurnCounts;
  /** Turns whose log is not contiguous (seq 0..n-1) or does not end with TURN_COMPLETED. */
  broken: string[];
  /** Turns taken over more than once. */
  retakenInFlight: string[];
  /** The turn-order violations, each naming its session and turns. */
  outOfOrder: string[];
  /** Follows that timed out, with how long after its submission the turn was done. */
  stalledDetail: string[];
  /** Acked turn ids not increasing within a session. */
  increasing: string[];
  /** Turn ids skipped between acked ones (given to submissions that were refused, never run). */
  skipped: number;
  /** The longest time from a turn's ack to its stored TURN_COMPLETED, in ms. */
  slowest: number;
  /** The settled status of each acked turn (`session/turn`), whose `runner` names the runner that ran it. */
  statuses: Map<string, TurnStatusRecord>;
  /** The sessions' stored events by format major (`v`; 0 for none): which releases wrote the logs. */
  formats: Record<number, number>;
}

/** One stored event with its stream sequence. */
export interface StoredEvent {
  streamSeq: number;
  event: EngineEvent;
}

/** A session's stored events, every message of it in stream order (none merged, none held back). */
async function sessionLog(
  nc: NatsConnection,
  sessionId: string,
  formats: Record<number, number> = {},
): Promise<StoredEvent[]> {
  const filter = subjects.sessionEvents(sessionId, await eventStreamCount(nc));
  const stream = eventStreamOfSubject(filter);
  const info = await (await jetstreamManager(nc)).streams.info(stream, { subjects_filter: filter });
  const total = Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
  if (total === 0) return [];
  const consumer = await orderedConsumer(jetstream(nc), stream, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
  });
  const stored: StoredEvent[] = [];
  let read = 0;
  try {
    while (read < total) {
      const batch = await consumer.fetch({ max_messages: total - read, expires: 5_000 });
      const before = read;
      for await (const msg of batch) {
        read += 1;
        const raw = msg.json<{ v?: unknown }>();
        // The stored format major (docs/protocol.md, "Format versions"): its `v`, 0 without one.
        const format = typeof raw?.v === "number" ? raw.v : 0;
        formats[format] = (formats[format] ?? 0) + 1;
        for (const event of parseStoredEvents(raw, `stream seq ${msg.seq}`).events)
          stored.push({ streamSeq: msg.seq, event });
      }
      if (read === before) throw new Error(`${sessionId}: read ${read} of its ${total} stored events`);
    }
  } finally {
    await releaseConsumer(consumer);
  }
  return stored;
}

/**
 * Turn-order violations in one session's log (stream order): a turn whose first TURN_STARTED is stored
 * before the previous turn's TURN_COMPLETED, or while the previous turn never completed.
 */
export function turnOrderViolations(sessionId: string, log: StoredEvent[]): string[] {
  const turnIds = [...new Set(log.map(({ event }) => event.turn_id))].sort((a, b) => a - b);
  const violations: string[] = [];
  for (let i = 1; i < turnIds.length; i++) {
    const [earlier, later] = [turnIds[i - 1]!, turnIds[i]!];
    const completed = log.find(({ event }) => event.turn_id === earlier && event.kind === "TURN_COMPLETED");
    const started = log.find(({ event }) => event.turn_id === later && event.kind === "TURN_STARTED");
    if (!started) continue;
    if (!completed || started.streamSeq < completed.streamSeq)
      violations.push(
        `${sessionId}: turn ${later} started (stream seq ${started.streamSeq}) before turn ${earlier} completed (${completed ? `stream seq ${completed.streamSeq}` : "never"})`,
      );
  }
  return violations;
}

/** How many of a turn's recorded calls repeat one recorded before (see `TurnCounts.callsRepeated`). */
function repeatedCalls(events: EngineEvent[]): number {
  const seen = new Set<string>();
  let repeated = 0;
  for (const event of events) {
    const call =
      event.kind === "AGENT_COMPLETED"
        ? `agent ${event.payload.wave}/${event.payload.agent_id}`
        : event.kind === "MODEL_CALL_COMPLETED"
          ? `model ${event.payload.call_key}`
          : event.kind === "TOOL_CALL_STARTED"
            ? `tool ${event.payload.call_id}`
            : null;
    if (call === null) continue;
    if (seen.has(call)) repeated += 1;
    seen.add(call);
  }
  return repeated;
}

/** Waits for every acked turn of `load` (stopped) to settle, then reads each session's log back and counts. */
export async function accountTurns(nc: NatsConnection, load: TurnLoad, settleMs = 60_000): Promise<TurnAccount> {
  const counts: TurnCounts = {
    submitted: load.acks.length,
    completed: 0,
    lost: 0,
    twice: 0,
    violations: 0,
    takeovers: 0,
    callsRepeated: 0,
  };
  const account: TurnAccount = {
    counts,
    broken: [],
    retakenInFlight: [],
    outOfOrder: [],
    stalledDetail: [],
    increasing: [],
    skipped: 0,
    slowest: 0,
    statuses: new Map(),
    formats: {},
  };
  const sessions = [...new Set(load.acks.map((ack) => ack.session_id))];
  for (const sessionId of sessions) {
    const acked = load.acks.filter((ack) => ack.session_id === sessionId).map((ack) => ack.turn_id);
    // Each turn settled first (a follow that timed out may have left it running), then the log read once.
    for (const turnId of acked) {
      const status = await settledStatus(nc, sessionId, turnId, settleMs).catch(() => null);
      if (status) account.statuses.set(`${sessionId}/${turnId}`, status);
    }
    const log = await sessionLog(nc, sessionId, account.formats);
    account.outOfOrder.push(...turnOrderViolations(sessionId, log));
    acked.forEach((turnId, index) => {
      const previous = index === 0 ? 0 : acked[index - 1]!;
      if (turnId <= previous) account.increasing.push(`${sessionId}: turn ${turnId} after ${previous}`);
      else account.skipped += turnId - previous - 1;
    });
    for (const turnId of acked) {
      const key = `${sessionId}/${turnId}`;
      const status = account.statuses.get(key);
      const events = log.filter(({ event }) => event.turn_id === turnId).map(({ event }) => event);
      const completions = events.filter((event) => event.kind === "TURN_COMPLETED");
      if (completions.length === 0 || status?.status !== "done") counts.lost += 1;
      else if (completions.length > 1) counts.twice += 1;
      else counts.completed += 1;
      counts.callsRepeated += repeatedCalls(events);
      const takeovers = events.filter((event) => event.kind === "TURN_RESUMED").length;
      counts.takeovers += takeovers;
      if (takeovers > 1) account.retakenInFlight.push(`${key} (${takeovers} takeovers)`);
      const end = completions[0];
      if (end) account.slowest = Math.max(account.slowest, end.ts_monotonic - load.submittedAt.get(key)!);
      if (load.stalled.has(key))
        account.stalledDetail.push(
          `${key} done ${end ? Math.round(end.ts_monotonic - load.stalled.get(key)!) : "never"} ms after its submission`,
        );
      // Contiguous as a reader sees it: each seq once (a rewrite of one is deduplicated), 0..n-1, ending the turn.
      const bySeq = new Map(events.map((event) => [event.seq, event]));
      const seqs = [...bySeq.keys()].sort((a, b) => a - b);
      const contiguous = seqs.every((seq, index) => seq === index);
      const last = bySeq.get(bySeq.size - 1)?.kind;
      if (!contiguous || last !== "TURN_COMPLETED") {
        const missing = seqs.length
          ? Array.from({ length: seqs.at(-1)! + 1 }, (_, seq) => seq).filter((seq) => !bySeq.has(seq))
          : [];
        account.broken.push(
          `${key} (${seqs.length} seqs to ${seqs.at(-1) ?? "none"}, missing [${missing.join(", ")}], kinds ${events.map((event) => `${event.seq}:${event.kind}`).join(" ")})`,
        );
      }
    }
  }
  counts.violations = account.outOfOrder.length;
  return account;
}

/** The counts as one printed line: `submitted 40, completed 40, lost 0, run twice 0, turn-order violations 0, takeovers 2, calls repeated 0`. */
export function countsLine(counts: TurnCounts): string {
  return `submitted ${counts.submitted}, completed ${counts.completed}, lost ${counts.lost}, run twice ${counts.twice}, turn-order violations ${counts.violations}, takeovers ${counts.takeovers}, calls repeated ${counts.callsRepeated}`;
}

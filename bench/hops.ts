import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { middle, round } from "./stats.ts";

/**
 * Counts a turn's sequential hops from the wire instead of from a list kept by
 * hand: while a few turns run one at a time, a wiretap (a `>` subscription in
 * the same account) sees every request and every reply. Requests whose
 * intervals overlap run in parallel (a wave's fan-out) and make one hop; a
 * request made inside another's interval (a worker reading JetStream, the
 * runner reserving the turn id while the client waits for its ack) is a nested
 * round trip of that hop. The turn's own event appends (pipelined: the turn
 * never waits for them) mark where it starts and ends; the bench client's
 * consumer traffic is observation, and the runner's KV and JetStream calls
 * about other sessions are background work: both are left out.
 */

interface WireMessage {
  t: number;
  subject: string;
  reply: string;
  size: number;
}

export interface HopGroup {
  /** What the hop asks, e.g. `scheduler.plan` or `agent ×3`. */
  label: string;
  requests: number;
  /** Sequential round trips made inside this hop (e.g. the worker reading JetStream). */
  nestedRtts: number;
  nestedLabel: string;
  /** Median duration on the wire (request seen → last reply seen), ms. */
  medianMs: number;
}

/** Where in the turn a hop happens. */
export type Phase = "submission" | "before TURN_STARTED" | "turn" | "after TURN_COMPLETED";

export interface HopAnalysis {
  turns: number;
  /** Turns whose hop sequence is the one shown in `phases` (the most common); the counts are medians over all turns. */
  turnsWithThisShape: number;
  /** The submission request, and the round trips the runner makes before it acks (nested in it). */
  submit: { rtts: number; medianMs: number; nestedLabel: string };
  /** Sequential hops of each phase after the ack, in order. */
  phases: { phase: Exclude<Phase, "submission">; groups: HopGroup[] }[];
  /** Sequential hops between TURN_STARTED and TURN_COMPLETED (what the runner's total_time_ms spans). */
  hops: number;
  /** Those hops plus their nested round trips. */
  turnRtts: number;
  /** Round trips after the ack and before TURN_STARTED (on the client's path too). */
  startRtts: number;
  /** Round trips after TURN_COMPLETED (off the client's path: bookkeeping). */
  finishRtts: number;
  /** Event-log appends per turn (pipelined JetStream publishes: stored messages, each an event or a batch). */
  eventAppends: number;
  meanEventBytes: number;
}

export class Wiretap {
  readonly #messages: WireMessage[];
  readonly #sub: Subscription;

  private constructor(sub: Subscription, messages: WireMessage[]) {
    this.#sub = sub;
    this.#messages = messages;
  }

  static async start(nc: NatsConnection): Promise<Wiretap> {
    const messages: WireMessage[] = [];
    const sub = nc.subscribe(">", {
      callback: (_error, msg) => {
        messages.push({ t: performance.now(), subject: msg.subject, reply: msg.reply ?? "", size: msg.data.length });
      },
    });
    await nc.flush();
    return new Wiretap(sub, messages);
  }

  stop(): WireMessage[] {
    this.#sub.unsubscribe();
    return this.#messages;
  }
}

interface Interval {
  name: string;
  start: number;
  end: number;
}

/** Requests per second seen on the wire, by kind of subject (KV bucket, stream, endpoint), busiest first. */
export function trafficBySubject(messages: WireMessage[], seconds: number): { subject: string; perSecond: number }[] {
  const counts = new Map<string, number>();
  for (const m of messages) {
    if (!INBOX.test(m.reply) || INBOX.test(m.subject)) continue;
    const name = shortName(m.subject, "").split(".").slice(0, 2).join(".");
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([subject, count]) => ({ subject, perSecond: round(count / seconds, 1) }));
}

/** A subject as a reader wants it: no session ids or turn numbers, JetStream API calls named. */
function shortName(subject: string, session: string): string {
  const kvGet = /^\$JS\.API\.DIRECT\.GET\.KV_([^.]+)\./.exec(subject);
  if (kvGet) return `KV get ${kvGet[1]}`;
  const kvPut = /^\$KV\.([^.]+)\./.exec(subject);
  if (kvPut) return `KV put ${kvPut[1]}`;
  const get = /^\$JS\.API\.(?:DIRECT\.GET|STREAM\.MSG\.GET)\.([^.]+)/.exec(subject);
  if (get) return `JetStream get ${get[1]}`;
  return subject
    .replace(/^conclave\./, "")
    .split(".")
    .map((token) => (token === session ? "<session>" : /^\d+$/.test(token) ? "<n>" : token))
    .join(".");
}

/** `agent ×3` for a fan-out of one family of subjects, the name for a single request. */
function labelOf(intervals: Interval[]): string {
  const families = new Map<string, Set<string>>();
  for (const { name } of intervals) {
    const family = name.includes(" ") ? name : (name.split(".")[0] ?? name);
    families.set(family, (families.get(family) ?? new Set()).add(name));
  }
  return [...families]
    .map(([family, names]) => {
      const count = intervals.filter((i) => names.has(i.name)).length;
      const label = names.size > 1 ? family : [...names][0]!;
      return count > 1 ? `${label} ×${count}` : label;
    })
    .join(" + ");
}

/** Merges overlapping intervals (sorted by start) into groups. */
function overlapGroups(intervals: Interval[]): Interval[][] {
  const groups: Interval[][] = [];
  let end = Number.NEGATIVE_INFINITY;
  for (const interval of [...intervals].sort((a, b) => a.start - b.start)) {
    if (interval.start > end) groups.push([]);
    groups.at(-1)!.push(interval);
    end = Math.max(end, interval.end);
  }
  return groups;
}

/**
 * Writes the runner sends during a turn without the turn waiting on them, each sent to ride along with a
 * request the turn does wait on: the turn's `inflight` status (`recordTaken`) and the scheduler's cooldowns
 * (written beside the memory commit). A busy machine can send one outside that request's window; a group
 * of nothing else is shown ("not waited on") but adds no round trip to the client's path.
 */
const NOT_WAITED_ON = new Set(["KV put conclave_turns", "KV put conclave_scheduler"]);

interface ShapeGroup {
  label: string;
  /** The turn waits on it: a sequential round trip of the client's path. */
  waited: boolean;
  requests: number;
  nestedRtts: number;
  nestedLabel: string;
  ms: number;
}
interface TurnShape {
  submit: { rtts: number; ms: number; nestedLabel: string };
  phases: Map<Phase, ShapeGroup[]>;
  events: number;
  eventBytes: number;
}

const PHASES: Exclude<Phase, "submission">[] = ["before TURN_STARTED", "turn", "after TURN_COMPLETED"];

/** Reply subjects: `_INBOX.…`, or a role's own prefix (`_INBOX_runner.…`). */
const INBOX = /^_INBOX[^.]*\./;

/** A reply subject's inbox prefix: each role has its own (`_INBOX_runner`, `_INBOX_worker`…; src/bus/connection.ts). */
const roleOf = (reply: string) => reply.split(".")[0] ?? reply;

/** `_INBOX.<connection>`: the requests of one connection share it (nats.js multiplexes replies on one inbox). */
const inboxOf = (reply: string) => reply.split(".").slice(0, 2).join(".");

function analyseTurn(messages: WireMessage[]): TurnShape | null {
  const submitMsg = messages[0];
  if (!submitMsg) return null;
  const session = submitMsg.subject.split(".").at(-1) ?? "";
  // The last reply on a request's inbox ends it (a streamed reply sends several).
  const replyAt = new Map<string, number>();
  for (const m of messages) if (INBOX.test(m.subject)) replyAt.set(m.subject, m.t);
  const requests = messages.filter(
    (m) => INBOX.test(m.reply) && !INBOX.test(m.subject) && !m.subject.startsWith("$JS.API.CONSUMER."),
  );
  // The runner appends the events: its connection is the one whose requests are the turn's hops.
  // conclave.events.<stream>.<session>.<turn>
  const appends = requests.filter(
    (m) => m.subject.split(".")[3] === session && m.subject.startsWith("conclave.events."),
  );
  const firstEvent = appends[0]?.t;
  const lastEvent = appends.at(-1)?.t;
  const submitEnd = replyAt.get(submitMsg.reply);
  if (firstEvent === undefined || lastEvent === undefined || submitEnd === undefined) return null;
  // The runner's requests go out on more than one inbox of its connection (nats-core's, and the event log's
  // own: src/bus/inboxRequests.ts), all under its role's prefix (`_INBOX_runner`): that prefix is the runner.
  const runner = roleOf(appends[0]!.reply);
  const client = inboxOf(submitMsg.reply);
  const intervals = (from: WireMessage[]): Interval[] =>
    from.flatMap((m) => {
      const end = replyAt.get(m.reply);
      return end === undefined ? [] : [{ name: shortName(m.subject, session), start: m.t, end }];
    });
  const work = requests.filter((m) => !m.subject.startsWith("conclave.events.") && inboxOf(m.reply) !== client);
  // The runner also does background work for its other sessions (KV reads and writes keyed by session):
  // of its KV and JetStream calls, only those about the traced session count.
  const aboutThisTurn = (m: WireMessage) =>
    !(m.subject.startsWith("$JS.") || m.subject.startsWith("$KV.")) || m.subject.split(".").includes(session);
  const runnerWork = intervals(work.filter((m) => roleOf(m.reply) === runner && aboutThisTurn(m)));
  // Requests of other connections (workers) made while a runner request waits are nested in it.
  const workerWork = intervals(work.filter((m) => roleOf(m.reply) !== runner));
  const submit: Interval = { name: "turn.submit", start: submitMsg.t, end: submitEnd };
  const within = (list: Interval[], start: number, end: number) =>
    overlapGroups(list.filter((i) => i.start >= start && i.end <= end));
  const top = runnerWork.filter((i) => !(i.start >= submit.start && i.end <= submit.end));
  const phaseOf = (i: Interval): Exclude<Phase, "submission"> =>
    i.start < firstEvent ? "before TURN_STARTED" : i.start <= lastEvent ? "turn" : "after TURN_COMPLETED";
  const phases = new Map<Phase, ShapeGroup[]>();
  for (const phase of PHASES) {
    phases.set(
      phase,
      overlapGroups(top.filter((i) => phaseOf(i) === phase)).map((group) => {
        const start = Math.min(...group.map((i) => i.start));
        const end = Math.max(...group.map((i) => i.end));
        const inner = within(workerWork, start, end);
        const waited = !(phase === "turn" && inner.length === 0 && group.every((i) => NOT_WAITED_ON.has(i.name)));
        return {
          label: waited ? labelOf(group) : `${labelOf(group)} (not waited on)`,
          waited,
          requests: group.length,
          nestedRtts: inner.length,
          nestedLabel: inner.map(labelOf).join(", then "),
          ms: end - start,
        };
      }),
    );
  }
  const inSubmit = within(runnerWork, submit.start, submit.end);
  return {
    submit: {
      rtts: 1 + inSubmit.length,
      ms: submit.end - submit.start,
      nestedLabel: inSubmit.map(labelOf).join(", then "),
    },
    phases,
    events: appends.length,
    eventBytes: appends.reduce((sum, m) => sum + m.size, 0),
  };
}

const signature = (shape: TurnShape) => {
  const phases = PHASES.map((phase) =>
    (shape.phases.get(phase) ?? []).map((g) => `${g.label}/${g.nestedRtts}`).join(" | "),
  );
  return `${phases.join(" || ")} #${shape.submit.rtts}`;
};
const mid = (values: number[]) => middle(values) ?? Number.NaN;

/** Splits the tapped traffic at each submission (turns ran one at a time) and finds the usual hop sequence. */
export function analyseHops(messages: WireMessage[]): HopAnalysis {
  const starts = messages.flatMap((m, index) =>
    m.subject.startsWith("conclave.turn.submit.") && m.reply ? [index] : [],
  );
  const shapes = starts
    .map((start, k) => analyseTurn(messages.slice(start, starts[k + 1] ?? messages.length)))
    .filter((shape): shape is TurnShape => shape !== null);
  if (shapes.length === 0) throw new Error("the wiretap saw no complete turn");
  const bySignature = new Map<string, TurnShape[]>();
  for (const shape of shapes) bySignature.set(signature(shape), [...(bySignature.get(signature(shape)) ?? []), shape]);
  const usual = [...bySignature.values()].sort((a, b) => b.length - a.length)[0]!;
  const first = usual[0]!;
  const phases = PHASES.map((phase) => ({
    phase,
    groups: (first.phases.get(phase) ?? []).map((group, index) => ({
      label: group.label,
      requests: group.requests,
      nestedRtts: group.nestedRtts,
      nestedLabel: group.nestedLabel,
      medianMs: round(mid(usual.map((shape) => shape.phases.get(phase)![index]!.ms)), 3),
    })),
  }));
  const count = (shape: TurnShape, phase: Phase) =>
    (shape.phases.get(phase) ?? []).reduce((sum, g) => (g.waited ? sum + 1 + g.nestedRtts : sum), 0);
  const events = usual.reduce((sum, shape) => sum + shape.events, 0);
  return {
    turns: shapes.length,
    turnsWithThisShape: usual.length,
    submit: {
      rtts: mid(shapes.map((shape) => shape.submit.rtts)),
      medianMs: round(mid(shapes.map((shape) => shape.submit.ms)), 3),
      nestedLabel: first.submit.nestedLabel,
    },
    phases,
    hops: mid(shapes.map((shape) => (shape.phases.get("turn") ?? []).filter((group) => group.waited).length)),
    turnRtts: mid(shapes.map((shape) => count(shape, "turn"))),
    startRtts: mid(shapes.map((shape) => count(shape, "before TURN_STARTED"))),
    finishRtts: mid(shapes.map((shape) => count(shape, "after TURN_COMPLETED"))),
    eventAppends: round(events / usual.length, 1),
    meanEventBytes: round(usual.reduce((sum, shape) => sum + shape.eventBytes, 0) / Math.max(1, events), 0),
  };
}

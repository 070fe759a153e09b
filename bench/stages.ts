import { middle, round } from "./stats.ts";

/** One event as the bench client saw it (ts on the runner's clock). */
export interface TracedEvent {
  kind: string;
  seq: number;
  ts: number;
  stage?: string;
  wave?: number;
  /** WAVE_STARTED: how many agents the wave asks. */
  agents?: number;
}

/** One turn seen from the client: its own clock (submit, ack, completion seen) and the events. */
export interface TurnTrace {
  submittedAt: number;
  ackedAt: number;
  seenAt: number;
  events: TracedEvent[];
}

export interface Segment {
  name: string;
  medianMs: number;
  meanMs: number;
  /** Share of the mean total. */
  share: number;
}

export interface StageBreakdown {
  turns: number;
  /** Runner clock: TURN_STARTED → TURN_COMPLETED, per stage (TURN_STAGE_CHANGED to the next one). */
  stages: Segment[];
  /** Runner clock: every step between consecutive events, in the order they happen. */
  steps: Segment[];
  /** Client's view, split at the ack and at the runner's first and last event (cross-process clocks). */
  client: Segment[];
  /** Submit → ack received, client clock (the turn starts before the ack reaches the client). */
  ackMedianMs: number;
  /** The runner's clock minus the client's, as measured and corrected for. */
  runnerAheadMs: number;
  /** What the traced turns did (medians): events, agents per wave, deliberation rounds, critic verdicts. */
  shape: { events: number; agentsPerWave: number[]; rounds: number; criticVerdicts: number };
}

const labelOf = (event: TracedEvent, index: Map<string, number>): string => {
  let label = event.kind;
  if (event.kind === "TURN_STAGE_CHANGED") label = `stage ${event.stage}`;
  else if (event.kind === "WAVE_STARTED" || event.kind === "WAVE_COMPLETED") label = `${event.kind} w${event.wave}`;
  else if (event.kind === "AGENT_COMPLETED" || event.kind === "AGENT_FAILED") {
    const key = `agent w${event.wave}`;
    index.set(key, (index.get(key) ?? 0) + 1);
    return `agent reply ${index.get(key)} (w${event.wave})`;
  }
  // Repeated kinds (deliberation rounds, re-renders) are numbered from the second one on.
  index.set(label, (index.get(label) ?? 0) + 1);
  const n = index.get(label)!;
  return n > 1 ? `${label} #${n}` : label;
};

function aggregate(rows: Map<string, number[]>, order: string[], turns: number): Segment[] {
  const total = order.reduce((sum, name) => sum + (rows.get(name) ?? []).reduce((a, b) => a + b, 0) / turns, 0);
  return order.map((name) => {
    const values = rows.get(name) ?? [];
    const mean = values.reduce((a, b) => a + b, 0) / turns;
    return {
      name,
      medianMs: round(middle(values) ?? 0, 3),
      meanMs: round(mean, 3),
      share: round(total > 0 ? mean / total : 0, 3),
    };
  });
}

/**
 * Where a turn's time goes, from the events' ts_monotonic and the client's own
 * clock. `runnerAheadMs`: how far the runner's clock is ahead of the client's
 * (measured over IPC), to line up the cross-process segments.
 */
export function breakdown(traces: TurnTrace[], runnerAheadMs = 0): StageBreakdown {
  const stageRows = new Map<string, number[]>();
  const stepRows = new Map<string, number[]>();
  const clientRows = new Map<string, number[]>();
  const stageOrder: string[] = [];
  const stepOrder: string[] = [];
  const push = (rows: Map<string, number[]>, order: string[], name: string, value: number) => {
    if (!rows.has(name)) {
      rows.set(name, []);
      order.push(name);
    }
    rows.get(name)!.push(value);
  };
  const clientOrder = [
    "submit → TURN_STARTED (request, turn-id reservation, start)",
    "TURN_STARTED → TURN_COMPLETED (the runner's turn)",
    "TURN_COMPLETED → seen by the client (last events stored and delivered)",
  ];
  const acks: number[] = [];
  for (const trace of traces) {
    const events = [...trace.events].sort((a, b) => a.seq - b.seq);
    const first = events[0];
    const last = events.at(-1);
    if (!first || !last) continue;
    const index = new Map<string, number>();
    let previous = labelOf(first, index);
    for (let i = 1; i < events.length; i++) {
      const label = labelOf(events[i]!, index);
      push(stepRows, stepOrder, `${previous} → ${label}`, events[i]!.ts - events[i - 1]!.ts);
      previous = label;
    }
    const boundaries = events.filter((event) => event.kind === "TURN_STAGE_CHANGED");
    for (let i = 0; i < boundaries.length; i++) {
      const end = boundaries[i + 1]?.ts ?? last.ts;
      push(stageRows, stageOrder, boundaries[i]!.stage ?? "?", end - boundaries[i]!.ts);
    }
    const values = [
      first.ts - runnerAheadMs - trace.submittedAt,
      last.ts - first.ts,
      trace.seenAt - (last.ts - runnerAheadMs),
    ];
    values.forEach((value, k) => {
      push(clientRows, [], clientOrder[k]!, value);
    });
    acks.push(trace.ackedAt - trace.submittedAt);
  }
  const turns = Math.max(1, traces.length);
  const mid = (values: number[]) => middle(values) ?? 0;
  const count = (trace: TurnTrace, kind: string) => trace.events.filter((e) => e.kind === kind).length;
  const waves = mid(traces.map((t) => count(t, "WAVE_STARTED")));
  const shape = {
    events: mid(traces.map((t) => t.events.length)),
    agentsPerWave: Array.from({ length: waves }, (_, w) =>
      mid(traces.map((t) => t.events.find((e) => e.kind === "WAVE_STARTED" && e.wave === w)?.agents ?? 0)),
    ),
    rounds: mid(traces.map((t) => count(t, "DELIB_ROUND_STARTED"))),
    criticVerdicts: mid(traces.map((t) => count(t, "CRITICS_UPDATED"))),
  };
  return {
    shape,
    turns: traces.length,
    stages: aggregate(stageRows, stageOrder, turns),
    steps: aggregate(stepRows, stepOrder, turns),
    client: aggregate(clientRows, clientOrder, turns),
    ackMedianMs: round(middle(acks) ?? Number.NaN, 3),
    runnerAheadMs: round(runnerAheadMs, 3),
  };
}

/**
 * The durability section's pure parts (issue 37): stores by kind, per-turn bytes between
 * checkpoints and their flatness, the targets, and the section of docs/BENCHMARKS.md.
 */
import type { DurabilityPlan } from "./durabilityPlan.ts";
import { FIRST_CHECKPOINT } from "./durabilityPlan.ts";
import type { DurabilityTakeover, TakeoverSeries } from "./durabilityTakeover.ts";
import { esc, ms, table } from "./markdown.ts";
import { round } from "./stats.ts";
import { DURABILITY_GOALS, judge, notMeasured, type Target } from "./targets.ts";

/** The section's first and last lines in docs/BENCHMARKS.md (HTML comments): what a run replaces. */
export const DURABILITY_MARKERS = [
  "<!-- durability: written by npm run bench, or alone by npm run bench -- --only durability -->",
  "<!-- /durability -->",
] as const;

/** Bytes held after `turn` turns (0: before the first), by stream (Conclave) or by table (PostgreSQL). */
export interface StoreReading {
  turn: number;
  streams: Record<string, number>;
}

export interface DurabilityRun {
  plan: DurabilityPlan;
  conclave: { session: string; failed: number; elapsedMs: number; readings: StoreReading[] } | { error: string };
  postgres: { version?: string; failed: number; elapsedMs: number; readings: StoreReading[] } | { error: string };
  takeover: DurabilityTakeover;
  durationS: number;
}

/** Conclave's stores, as the report groups its streams. */
export const STORES = ["events", "kv", "memory", "wal", "other"] as const;
export type Store = (typeof STORES)[number];
const STORE_TITLES: Record<Store, string> = {
  events: "event log",
  kv: "KV buckets",
  memory: "memory",
  wal: "turn WAL",
  other: "other",
};

/** Which store a stream is: the event log's streams, memory (its stream and graph bucket), the WAL, other buckets. */
export function storeOf(stream: string): Store {
  if (stream.startsWith("CONCLAVE_EVENTS")) return "events";
  if (stream === "CONCLAVE_MEMORY" || stream === "KV_conclave_memory_graph") return "memory";
  if (stream === "CONCLAVE_TURNS") return "wal";
  if (stream.startsWith("KV_")) return "kv";
  return "other";
}

/** A reading's bytes by store, and their total. */
export function byStore(reading: StoreReading): Record<Store | "total", number> {
  const out = { events: 0, kv: 0, memory: 0, wal: 0, other: 0, total: 0 };
  for (const [stream, bytes] of Object.entries(reading.streams)) {
    out[storeOf(stream)] += bytes;
    out.total += bytes;
  }
  return out;
}

export const totalOf = (reading: StoreReading): number =>
  Object.values(reading.streams).reduce((sum, bytes) => sum + bytes, 0);

/** Bytes added per turn between two checkpoints. */
export interface Window {
  from: number;
  to: number;
  perTurn: number;
}

/**
 * Bytes per turn between consecutive readings from turn FIRST_CHECKPOINT on (the session's first
 * turns create its keys and are left out): (bytes at `to` − bytes at `from`) ÷ (to − from).
 */
export function perTurnWindows(readings: StoreReading[], bytes: (r: StoreReading) => number = totalOf): Window[] {
  const kept = readings.filter((r) => r.turn >= FIRST_CHECKPOINT).sort((a, b) => a.turn - b.turn);
  return kept.slice(1).map((r, i) => {
    const previous = kept[i]!;
    return {
      from: previous.turn,
      to: r.turn,
      perTurn: round((bytes(r) - bytes(previous)) / (r.turn - previous.turn), 1),
    };
  });
}

/**
 * How flat the bytes per turn are: the largest window's ÷ the smallest's (1 = perfectly flat).
 * NaN with no window; Infinity when a window added nothing or shrank (not flat at all).
 */
export function flatness(windows: Window[]): number {
  if (windows.length === 0) return Number.NaN;
  const values = windows.map((w) => w.perTurn);
  const least = Math.min(...values);
  return least <= 0 ? Number.POSITIVE_INFINITY : round(Math.max(...values) / least, 3);
}

const kib = (bytes: number) => `${round(bytes / 1024, 1)} KiB`;
const failedOf = (part: object): string | undefined => ("error" in part ? String(part.error) : undefined);
const lastOf = (part: DurabilityRun["conclave"] | DurabilityRun["postgres"]) =>
  "error" in part ? undefined : part.readings.at(-1);

/** The section's targets: flat bytes per turn, storage against PostgresSaver, takeover p95 and tokens re-spent on both deployments. */
export function durabilityTargets(run: DurabilityRun): Target[] {
  const g = DURABILITY_GOALS;
  const n = run.plan.turns;
  const flatStatement = `Bytes persisted per turn flat, within 10%, from turn ${FIRST_CHECKPOINT} to turn ${n} of one session (largest ÷ smallest per-turn growth between checkpoints, all stores)`;
  const storageStatement = `Conclave's storage after ${n} turns of one session at most 1/10 of LangGraph.js + PostgresSaver's tables after the same turns of one thread`;
  const targets: Target[] = [];
  const conclaveError = failedOf(run.conclave);
  if (conclaveError || "error" in run.conclave) {
    const reason = `the Conclave session failed: ${conclaveError}`;
    targets.push(notMeasured("durability-bytes-flat", flatStatement, g.bytesPerTurnFlatness, "≤", "x", reason));
  } else {
    const windows = perTurnWindows(run.conclave.readings);
    const value = flatness(windows);
    targets.push(
      Number.isNaN(value)
        ? notMeasured(
            "durability-bytes-flat",
            flatStatement,
            g.bytesPerTurnFlatness,
            "≤",
            "x",
            `fewer than two readings from turn ${FIRST_CHECKPOINT} on`,
          )
        : judge(
            "durability-bytes-flat",
            flatStatement,
            value,
            g.bytesPerTurnFlatness,
            "≤",
            "x",
            `B/turn ${windows.map((w) => `${w.from}→${w.to}: ${w.perTurn}`).join(", ")}`,
          ),
    );
  }
  const ours = lastOf(run.conclave);
  const theirs = lastOf(run.postgres);
  if (ours && theirs && ours.turn === theirs.turn && totalOf(theirs) > 0)
    targets.push(
      judge(
        "durability-storage-vs-postgressaver",
        storageStatement,
        totalOf(ours) / totalOf(theirs),
        g.storageVsPostgresSaver,
        "≤",
        "x",
        `Conclave ${kib(totalOf(ours))}, PostgresSaver ${kib(totalOf(theirs))} after ${ours.turn} turns; PostgresSaver ÷ Conclave = ${round(totalOf(theirs) / Math.max(1, totalOf(ours)), 1)}x`,
      ),
    );
  else {
    const reason = failedOf(run.postgres)
      ? `LangGraph.js + PostgresSaver not measured: ${failedOf(run.postgres)}`
      : conclaveError
        ? `the Conclave session failed: ${conclaveError}`
        : "the two runs did not end at the same turn";
    targets.push(
      notMeasured("durability-storage-vs-postgressaver", storageStatement, g.storageVsPostgresSaver, "≤", "x", reason),
    );
  }
  for (const [key, label] of [
    ["single", "one server"],
    ["cluster", "three nodes"],
  ] as const)
    targets.push(...takeoverTargets(run.takeover[key], key, label));
  return targets;
}

function takeoverTargets(series: TakeoverSeries | { error: string }, key: string, label: string): Target[] {
  const g = DURABILITY_GOALS;
  const p95Statement = `Takeover on ${label}: SIGKILL of the runner mid-turn → TURN_RESUMED, p95 at most 2 s`;
  const tokensStatement = `Takeover on ${label}: model tokens re-spent on calls the log already recorded (identical requests of the killed turn)`;
  const p95Id = `durability-takeover-p95-${key}`;
  const tokensId = `durability-tokens-respent-${key}`;
  if ("error" in series)
    return [
      notMeasured(p95Id, p95Statement, g.takeoverP95Ms, "≤", " ms", `the deployment failed: ${series.error}`),
      notMeasured(tokensId, tokensStatement, g.tokensRespent, "≤", " tokens", `the deployment failed: ${series.error}`),
    ];
  const kills = series.kills.length;
  const resumedOf = series.resumed?.n ?? 0;
  return [
    series.resumed && resumedOf === kills
      ? judge(
          p95Id,
          p95Statement,
          series.resumed.p95,
          g.takeoverP95Ms,
          "≤",
          " ms",
          `${kills} kills; p50 ${ms(series.resumed.p50)} ms, max ${ms(series.resumed.max)} ms`,
        )
      : series.resumed
        ? // A kill never resumed: its time is unbounded, so the p95 of the others cannot stand for it.
          judge(
            p95Id,
            p95Statement,
            Number.POSITIVE_INFINITY,
            g.takeoverP95Ms,
            "≤",
            " ms",
            `${kills - resumedOf} of ${kills} killed turns never showed TURN_RESUMED`,
          )
        : notMeasured(p95Id, p95Statement, g.takeoverP95Ms, "≤", " ms", "no runner could be killed mid-turn"),
    kills > 0
      ? judge(
          tokensId,
          tokensStatement,
          series.tokensRespent,
          g.tokensRespent,
          "≤",
          " tokens",
          `${kills} kills; ${series.repeatedModelCalls} model calls repeated; an undisturbed turn makes ${series.modelCallsPerTurn} calls`,
        )
      : notMeasured(tokensId, tokensStatement, g.tokensRespent, "≤", " tokens", "no runner could be killed mid-turn"),
  ];
}

const ABOUT = [
  "What a turn leaves behind, and what a runner's crash costs.",
  "",
  "- *Running it*: with every `npm run bench`, and alone with `npm run bench -- --only durability` (`BENCH_QUICK=1`: 50 turns and 3 kills a deployment; `BENCH_DURABILITY_TURNS` and `BENCH_DURABILITY_KILLS` set them, by default 500 and 10). Alone, a full-size run replaces this section; a quick one only prints it.",
  `- *Bytes per turn*: one session sends its turns back to back on the offline deployment (nats-server, the workers, a runner; the offline model). Before the first turn and after each checkpoint the bench reads every JetStream stream's \`state.bytes\` (stream info: the messages held, with their subjects and headers; a KV bucket is the stream \`KV_<bucket>\`), grouped as the *event log* (\`CONCLAVE_EVENTS_*\`), *KV buckets* (sessions, turn statuses, owners, runners…), *memory* (\`CONCLAVE_MEMORY\` and the bucket \`conclave_memory_graph\`), the *turn WAL* (\`CONCLAVE_TURNS\`) and *other* streams. *B/turn* is the growth between two checkpoints ÷ the turns between them; *flatness* is the largest window's B/turn ÷ the smallest's, from turn ${FIRST_CHECKPOINT} on.`,
  "- *Storage against PostgresSaver*: the same turns (same texts, same stage logic) on one thread of the LangGraph.js pipeline with a PostgresSaver (bench/postgresSaver.ts); at the same checkpoints, `pg_total_relation_size` of each `checkpoint*` table (heap, TOAST and indexes: the pages it takes). Conclave's figure is the total `state.bytes` of every stream (what they hold, not the file store's blocks on disk).",
  "- *Takeover*: the busy day's kill (bench/takeover.ts) on two deployments in LLM mode against the simulated model, two runners each: one server, and a three-node cluster with every stream and bucket R3. The runner owning a turn is SIGKILLed once `WAVE_COMPLETED` is stored; the bench times kill → `TURN_RESUMED` and → `TURN_COMPLETED` as the client sees them, and starts a runner again before the next kill.",
  "- *Tokens re-spent*: the model's tokens (its own count: four characters a token, prompt and reply) for the killed turn's requests identical to an earlier one of it, i.e. asked again after the takeover for what the log held (a call still in flight at the kill and asked again would count too).",
  `- *Targets* (issue 37): B/turn flat within 10% (flatness ≤ 1.1x) from turn ${FIRST_CHECKPOINT} to the last; Conclave's storage at most 1/10 of PostgresSaver's after the same turns; on one server and on three nodes, kill → \`TURN_RESUMED\` p95 at most 2 s and 0 tokens re-spent.`,
].join("\n");

function storageSection(run: DurabilityRun): string[] {
  if ("error" in run.conclave) return ["### Bytes per turn", "", `Could not run: ${esc(run.conclave.error)}`];
  const readings = run.conclave.readings;
  const windows = (store?: Store) => perTurnWindows(readings, store ? (r) => byStore(r)[store] : totalOf);
  const total = windows();
  const flat = flatness(total);
  return [
    `### Bytes per turn (one session, ${run.plan.turns} turns, offline model)`,
    "",
    `${run.conclave.failed} of ${run.plan.turns} turns ended other than \`Complete\`; ${round(run.conclave.elapsedMs / 1000, 1)} s.`,
    "",
    table(
      ["after turn", ...STORES.map((s) => `${STORE_TITLES[s]} KiB`), "total KiB"],
      readings.map((r) => {
        const stores = byStore(r);
        return [r.turn, ...STORES.map((s) => round(stores[s] / 1024, 1)), round(stores.total / 1024, 1)];
      }),
    ),
    "",
    table(
      ["turns", ...STORES.map((s) => `${STORE_TITLES[s]} B/turn`), "total B/turn"],
      total.map((w, i) => [`${w.from} → ${w.to}`, ...STORES.map((s) => windows(s)[i]!.perTurn), w.perTurn]),
    ),
    "",
    `Flatness (largest ÷ smallest total B/turn from turn ${FIRST_CHECKPOINT}): ${Number.isFinite(flat) ? `${flat}x` : "–"}.`,
  ];
}

function postgresSection(run: DurabilityRun): string[] {
  const title = `### Storage after ${run.plan.turns} turns against LangGraph.js + PostgresSaver`;
  if ("error" in run.postgres) return [title, "", `Not measured: ${esc(run.postgres.error)}`];
  const ours = "error" in run.conclave ? [] : run.conclave.readings;
  const tables = [...new Set(run.postgres.readings.flatMap((r) => Object.keys(r.streams)))].sort();
  return [
    title,
    "",
    `PostgreSQL ${run.postgres.version ?? "?"}; ${run.postgres.failed} of ${run.plan.turns} turns not stored; ${round(run.postgres.elapsedMs / 1000, 1)} s.`,
    "",
    table(
      ["after turn", ...tables.map((t) => `${t} KiB`), "PostgresSaver KiB", "Conclave KiB", "Conclave ÷ PostgresSaver"],
      run.postgres.readings.map((r) => {
        const conclave = ours.find((o) => o.turn === r.turn);
        const theirs = totalOf(r);
        return [
          r.turn,
          ...tables.map((t) => round((r.streams[t] ?? 0) / 1024, 1)),
          round(theirs / 1024, 1),
          conclave ? round(totalOf(conclave) / 1024, 1) : "–",
          conclave && theirs > 0 ? round(totalOf(conclave) / theirs, 3) : "–",
        ];
      }),
    ),
  ];
}

function takeoverSection(takeover: DurabilityTakeover): string[] {
  const rows = [takeover.single, takeover.cluster].map((s, i) => {
    const label = i === 0 ? "one server" : "three nodes (R3)";
    if ("error" in s) return [label, `could not run: ${esc(s.error)}`, "–", "–", "–", "–", "–", "–", "–"];
    return [
      label,
      s.kills.length,
      ms(s.resumed?.p50),
      ms(s.resumed?.p95),
      ms(s.resumed?.max),
      ms(s.completed?.p50),
      s.kills.filter((k) => k.status !== "Complete").length,
      s.repeatedModelCalls,
      s.tokensRespent,
    ];
  });
  return [
    `### Takeover after SIGKILL (simulated ${takeover.modelLatencyMs} ms model, killed after \`${takeover.killAfter}\`)`,
    "",
    table(
      [
        "deployment",
        "kills",
        "→ TURN_RESUMED p50 ms",
        "p95 ms",
        "max ms",
        "→ TURN_COMPLETED p50 ms",
        "not Complete",
        "model calls repeated",
        "tokens re-spent",
      ],
      rows,
    ),
  ];
}

/** The section, between its markers; `header` (e.g. the run's line and targets table) goes after the title. */
export function renderDurability(run: DurabilityRun | undefined, header?: string): string {
  const body = run
    ? [...storageSection(run), "", ...postgresSection(run), "", ...takeoverSection(run.takeover)]
    : ["Not in this run: `npm run bench`, or `npm run bench -- --only durability`, measures it."];
  return [
    DURABILITY_MARKERS[0],
    "## Durability (issue 37)",
    "",
    ABOUT,
    "",
    ...(header ? [header, ""] : []),
    ...body,
    DURABILITY_MARKERS[1],
  ].join("\n");
}

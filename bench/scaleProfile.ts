/**
 * `BENCH_SCALE_PROFILE=1`: CPU profiles of `--scale`'s runners and workers
 * over each point's measured window, to say where CPU per turn goes as slices
 * are added. Every runner and worker is started with the bench hooks
 * (bench/processHooks.mjs) and its V8 sampling profiler is started and stopped
 * over IPC around the measured turns, so start-up is not in it. The profiles
 * of one kind of process (runners, workers) are summed and divided by the
 * point's turns: self time per turn by function and by origin. The profiler
 * costs CPU of its own, so a profiled run's throughput is not the targets'.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { eventStream } from "../src/bus/subjects.ts";
import type { ConclaveProcess } from "../src/cli/childProcess.ts";
import { conclaveStores } from "../src/nats/clusterStatus.ts";
import { controlProcess } from "./cluster.ts";
import { type ProfileEntry, summarizeProfile } from "./profile.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";

/** The sampling interval: coarse enough to cost little, fine enough for a 100-turn window. */
const SAMPLING_US = 500;
/** Functions and origins kept per kind of process. */
const TOP = 12;

let directory: string | null | undefined;

/** Where the run's profiles go when `BENCH_SCALE_PROFILE=1` (one directory a run); null when it is not set. */
export function scaleProfileDirectory(env = process.env): string | null {
  if (directory === undefined)
    directory = env.BENCH_SCALE_PROFILE === "1" ? mkdtempSync(join(tmpdir(), "conclave-scale-profile-")) : null;
  return directory;
}

/**
 * Where one kind of process spent its CPU per turn, in ms: its CPU per turn as /proc counts it, split by the
 * shares of its profiles' busy samples. The shares, not the sampled times, are used: a throttled slice keeps
 * its wall-clock samples ticking while it waits for its quota, which inflates sampled time, not shares.
 */
export interface KindProfile {
  kind: "runners" | "workers";
  processes: number;
  /** CPU per turn of this kind of process (/proc), which the entries split. */
  cpuMsPerTurn: number;
  gcMsPerTurn: number;
  byOrigin: ProfileEntry[];
  topSelf: ProfileEntry[];
}

/** One point's profiles. */
export interface PointProfile {
  kinds: KindProfile[];
  /** Writes per turn by store: what every replica of it applies (NATS's share of the turn, by store). */
  writes: StoreWrites[];
  /** The .cpuprofile files (open them in Chrome DevTools). */
  files: string[];
}

const kindOf = (process: ConclaveProcess): KindProfile["kind"] | null =>
  process.name.startsWith("runner-") ? "runners" : process.name.startsWith("worker-") ? "workers" : null;

/** Starts the profiler in every runner and worker of the point. */
export async function startProfiles(processes: readonly ConclaveProcess[]): Promise<ConclaveProcess[]> {
  const profiled = processes.filter((process) => kindOf(process) !== null);
  await Promise.all(profiled.map((p) => controlProcess(p, { bench: "profile-start", intervalUs: SAMPLING_US })));
  return profiled;
}

/**
 * Stops them, writes each profile to `directory`, and splits each kind's CPU per turn (`cpuPerTurn`, from
 * /proc) by its profiles' shares.
 */
export async function stopProfiles(
  profiled: readonly ConclaveProcess[],
  directory: string,
  label: string,
  cpuPerTurn: Record<KindProfile["kind"], number>,
  writes: StoreWrites[],
): Promise<PointProfile> {
  const files: string[] = [];
  const byKind = new Map<KindProfile["kind"], ReturnType<typeof summarizeProfile>[]>();
  for (const process of profiled) {
    const path = join(directory, `${label}-${process.name}.cpuprofile`);
    await controlProcess(process, { bench: "profile-stop", path }, 60_000);
    files.push(path);
    const kind = kindOf(process)!;
    byKind.set(kind, [...(byKind.get(kind) ?? []), summarizeProfile(path, process.name, 1_000)]);
  }
  const kinds = [...byKind].map(([kind, summaries]): KindProfile => {
    const busy = summaries.reduce((sum, summary) => sum + summary.busyMs, 0);
    const cpuMsPerTurn = cpuPerTurn[kind];
    const gc = summaries.reduce((sum, summary) => sum + summary.gcMs, 0);
    return {
      kind,
      processes: summaries.length,
      cpuMsPerTurn,
      gcMsPerTurn: round(busy > 0 ? (gc / busy) * cpuMsPerTurn : 0, 2),
      byOrigin: splitByShare(
        summaries.flatMap((summary) => summary.byOrigin),
        busy,
        cpuMsPerTurn,
      ),
      topSelf: splitByShare(
        summaries.flatMap((summary) => summary.topSelf),
        busy,
        cpuMsPerTurn,
      ),
    };
  });
  for (const kind of kinds)
    progress(
      `    profile, ${kind.kind} (${kind.processes}): ${kind.cpuMsPerTurn} ms CPU/turn, GC ${kind.gcMsPerTurn}; ${kind.byOrigin
        .slice(0, 7)
        .map((entry) => `${entry.name} ${entry.ms}`)
        .join(", ")}`,
    );
  progress(`    writes per turn: ${writes.map((store) => `${store.stream} ${store.perTurn}`).join(", ")}`);
  return { kinds, writes, files };
}

/**
 * Entries of the same name added up over the processes, the largest first: `share` of the kind's busy
 * samples, and `ms` that share of `cpuMsPerTurn`.
 */
export function splitByShare(entries: readonly ProfileEntry[], busyMs: number, cpuMsPerTurn: number): ProfileEntry[] {
  const totals = new Map<string, number>();
  for (const entry of entries) totals.set(entry.name, (totals.get(entry.name) ?? 0) + entry.ms);
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([name, ms]) => {
      const share = busyMs > 0 ? ms / busyMs : 0;
      return { name, ms: round(share * cpuMsPerTurn, 2), share: round(share, 3) };
    });
}

/** Writes per turn to one stream or bucket over a point (its last sequence's growth ÷ turns): each is applied by every replica. */
export interface StoreWrites {
  stream: string;
  perTurn: number;
}

/** Each Conclave store's last sequence now (a store that cannot be read is left out). */
export async function storeSequences(nc: NatsConnection, eventStreams: number): Promise<Map<string, number>> {
  const jsm = await jetstreamManager(nc);
  const names = conclaveStores(Array.from({ length: eventStreams }, (_, i) => eventStream(i))).map((s) => s.stream);
  const infos = await Promise.all(names.map((name) => jsm.streams.info(name).catch(() => null)));
  return new Map(infos.flatMap((info) => (info ? [[info.config.name, info.state.last_seq] as const] : [])));
}

/** The stores written over a point, most writes per turn first. */
export function writesPerTurn(before: Map<string, number>, after: Map<string, number>, turns: number): StoreWrites[] {
  return [...after]
    .map(([stream, seq]) => ({ stream, perTurn: round((seq - (before.get(stream) ?? 0)) / Math.max(turns, 1), 2) }))
    .filter((writes) => writes.perTurn > 0)
    .sort((a, b) => b.perTurn - a.perTurn);
}

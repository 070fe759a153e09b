import { readFileSync } from "node:fs";
import { round } from "./stats.ts";

/** The V8 CPU profile format (`.cpuprofile`), as the inspector's Profiler.stop returns it. */
interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileEntry {
  name: string;
  ms: number;
  /** Share of the busy (non-idle) time. */
  share: number;
}

export interface ProfileSummary {
  process: string;
  wallMs: number;
  /** Sampled time not idle: JavaScript, GC, and V8/Node internals ("(program)"). */
  busyMs: number;
  idleMs: number;
  gcMs: number;
  /** Self time by function, highest first. */
  topSelf: ProfileEntry[];
  /** Self time by where the code lives: a package, Node internals, or a Conclave directory. */
  byOrigin: ProfileEntry[];
  /** Inclusive time of selected Conclave and library entry points (a sample counts once per function). */
  topInclusive: ProfileEntry[];
}

const ROOT_NAMES = new Set(["(root)", "(program)", "(idle)", "(garbage collector)"]);

/** Where a frame's code lives: `xstate`, `@nats-io/nats-core`, `node:internal`, `conclave src/runtime`, … */
function originOf(url: string, functionName: string): string {
  if (ROOT_NAMES.has(functionName)) return functionName;
  if (!url) return "(native / V8 builtins)";
  const modules = url.lastIndexOf("/node_modules/");
  if (modules >= 0) {
    const parts = url.slice(modules + "/node_modules/".length).split("/");
    return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  if (url.startsWith("node:")) return "node internals";
  const local = /\/(src\/[^/]+|machines|agents|bench|bin)\//.exec(url);
  if (local) return `conclave ${local[1]}`;
  return url.replace(/^file:\/\//, "");
}

const frameName = (node: CpuProfileNode): string => {
  const { functionName, url, lineNumber } = node.callFrame;
  if (ROOT_NAMES.has(functionName)) return functionName;
  const path = url.replace(/^file:\/\//, "");
  const file = path.includes("/node_modules/")
    ? path.replace(/^.*\/node_modules\//, "")
    : path.replace(/^.*?\/(src|machines|agents|bench|bin)\//, "$1/");
  return `${functionName || "(anonymous)"}${file ? ` ${file}:${lineNumber + 1}` : ""}`;
};

/** Reads a .cpuprofile and summarises where the process spent its time. */
export function summarizeProfile(path: string, processName: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  // Time per sample: the delta to the next sample (the last one gets the mean).
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const wallMs = (profile.endTime - profile.startTime) / 1000;
  const meanMs = samples.length > 0 ? wallMs / samples.length : 0;
  const selfMs = new Map<number, number>();
  const inclusive = new Map<string, number>();
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i]!;
    const ms = i + 1 < deltas.length ? deltas[i + 1]! / 1000 : meanMs;
    selfMs.set(id, (selfMs.get(id) ?? 0) + ms);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at)!;
      if (ROOT_NAMES.has(node.callFrame.functionName)) continue;
      const name = frameName(node);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + ms);
    }
  }

  let idleMs = 0;
  let gcMs = 0;
  const self = new Map<string, number>();
  const origins = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const node = byId.get(id)!;
    const name = frameName(node);
    if (name === "(idle)") idleMs += ms;
    if (name === "(garbage collector)") gcMs += ms;
    self.set(name, (self.get(name) ?? 0) + ms);
    const origin = originOf(node.callFrame.url, node.callFrame.functionName);
    origins.set(origin, (origins.get(origin) ?? 0) + ms);
  }
  const total = [...selfMs.values()].reduce((sum, ms) => sum + ms, 0);
  const busyMs = total - idleMs;
  const ranked = (entries: Map<string, number>, keep: (name: string) => boolean = () => true) =>
    [...entries]
      .filter(([name]) => name !== "(idle)" && keep(name))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms: round(ms, 1), share: round(busyMs > 0 ? ms / busyMs : 0, 3) }));
  // Inclusive: Conclave's own functions and the library entry points they call (not the event loop's frames).
  const notable = (name: string) =>
    /(src|machines|agents)\/[^ ]+\.ts:/.test(name) ||
    /^(request|publish) @nats-io\/(nats-core|jetstream)\//.test(name) ||
    /^(safeParse|parse|createActor) (zod|xstate)\//.test(name);
  return {
    process: processName,
    wallMs: round(wallMs, 1),
    busyMs: round(busyMs, 1),
    idleMs: round(idleMs, 1),
    gcMs: round(gcMs, 1),
    topSelf: ranked(self),
    byOrigin: ranked(origins),
    topInclusive: ranked(inclusive, notable),
  };
}

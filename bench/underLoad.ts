import { type BurstRun, runBurst } from "./burst.ts";
import { type LoadTakeoverRun, runLoadTakeover } from "./loadTakeover.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";
import { runSoak, type SoakRun } from "./soak.ts";
import type { Target } from "./targets.ts";
import { underLoadTargets } from "./underLoadTargets.ts";

/** "Under load" (issue 42): a burst of sessions, a soak, and takeovers with turns in flight. A phase that could not run says why. */
export interface UnderLoadRun {
  burst: { modelLatencyMs: number; patienceMs: number; runs: BurstRun[] } | { error: string };
  soak: SoakRun | { error: string };
  takeover: LoadTakeoverRun | { error: string };
  targets: Target[];
}

async function attempt<T>(name: string, run: () => Promise<T>): Promise<T | { error: string }> {
  try {
    return await run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    progress(`under load: the ${name} phase failed: ${message}`);
    return { error: message };
  }
}

/** The three phases, each on its own deployment(s), one after the other. */
export async function runUnderLoad(plan: BenchPlan, tag: string): Promise<UnderLoadRun> {
  const burst = await attempt("burst", () => runBurst(plan, tag));
  const soak = await attempt("soak", () => runSoak(plan, tag));
  const takeover = await attempt("takeover", () => runLoadTakeover(plan, tag));
  const run = { burst, soak, takeover, targets: [] as Target[] };
  run.targets = underLoadTargets(run);
  return run;
}

/**
 * The knowledge section of `npm run bench` (issue 39): retrieval quality on this repository's
 * docs (bench/knowledgeQuality.ts) and speed at 10 000 chunks (bench/knowledgeScale.ts). Run alone
 * with `npm run bench -- --only knowledge`.
 */
import { writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { describeEnvironment } from "./environment.ts";
import { runKnowledgeQuality } from "./knowledgeQuality.ts";
import {
  KNOWLEDGE_MARKERS,
  type KnowledgeRun,
  knowledgePlan,
  knowledgeTargets,
  renderKnowledge,
} from "./knowledgeReport.ts";
import { runKnowledgeScale } from "./knowledgeScale.ts";
import { spliceSection, targetsTable } from "./markdown.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";

const failure = (error: unknown) => ({
  error: error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error),
});

/** The whole section: quality for each embedder, then the speed run. A part that fails is reported, not fatal. */
export async function runKnowledge(plan: BenchPlan): Promise<KnowledgeRun> {
  const p = knowledgePlan(plan.quick);
  const startedAt = performance.now();
  progress(`knowledge: the docs question set, then ${p.chunks} chunks indexed and ${p.queries} searches timed`);
  const quality = await runKnowledgeQuality();
  const scale = await runKnowledgeScale(p.chunks, p.queries).catch(failure);
  if (!("error" in scale))
    progress(
      `knowledge at ${scale.chunks} chunks (${scale.embedder}): indexing ${scale.indexPerS} chunks/s, search p95 ${scale.search.p95} ms`,
    );
  return { plan: p, quality, scale, durationS: Math.round((performance.now() - startedAt) / 1000) };
}

/**
 * `--only knowledge`: the section alone, its targets and figures on stdout, its results in a
 * temporary file. A full-size run (not BENCH_QUICK, 10 000 chunks) also replaces its section of `report`.
 */
export async function knowledgeOnly(plan: BenchPlan, report: string): Promise<void> {
  const run = await runKnowledge(plan);
  const environment = describeEnvironment();
  const path = join(tmpdir(), `conclave-bench-knowledge-${Date.now()}.json`);
  writeFileSync(path, `${JSON.stringify({ environment, run }, null, 2)}\n`);
  const targets = knowledgeTargets(run);
  const ran = `Run alone (\`npm run bench -- --only knowledge\`) at ${environment.commit}, ${environment.date.slice(0, 10)}, on ${environment.cores} cores (${environment.cpuModel}), load average ${loadavg()[0]?.toFixed(1)} at its end${plan.quick ? ", BENCH_QUICK" : ""}.`;
  const section = renderKnowledge(run, `${ran}\n\n${targetsTable(targets)}`);
  process.stdout.write(`${section}\n`);
  const full = !plan.quick && run.plan.chunks >= 10_000;
  if (full) spliceSection(report, section, ...KNOWLEDGE_MARKERS);
  progress(
    `done in ${run.durationS} s; results in ${path}${full ? "; its section of docs/BENCHMARKS.md replaced" : "; docs/ left alone (a quick or smaller run)"}`,
  );
  for (const target of targets) progress(`target ${target.id}: ${target.verdict}`);
}

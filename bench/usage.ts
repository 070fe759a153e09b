/** `npm run bench -- --help`. */
export const USAGE = `npm run bench [-- --render | --only busy-day | --only under-load | --only tracing | --only knowledge | --cluster | --scale | --help]   (or: npx tsx bench/run.ts …)

  (no flag)   runs every measurement (about 35 minutes on 2 cores; CPU-sensitive: run it on a quiet machine)
              and writes docs/BENCHMARKS.md (keeping its <!-- by hand --> readings), docs/benchmarks-summary.json
              and docs/benchmarks.json
  --render    rewrites docs/BENCHMARKS.md and docs/benchmarks-summary.json from docs/benchmarks.json
  --only busy-day   (or BENCH_ONLY=busy-day) runs only the busy-day phases (overload, idle sessions,
              takeover): prints their section of the report on stdout and writes their results to
              a temporary file; docs/ is left alone
  --only under-load (or BENCH_ONLY=under-load) runs only the under-load phases (issue 42: a burst of
              sessions, a soak, takeovers with turns in flight): prints their section and targets on
              stdout, results to a temporary file; a full-size run (not BENCH_QUICK) also replaces
              its own section of docs/BENCHMARKS.md (the rest is left alone)
  --only durability (or BENCH_ONLY=durability) runs only the durability section (issue 37: bytes per
              turn of one long session, its storage against PostgresSaver's, takeovers on one server and
              on three nodes): prints its section and targets, results to a temporary file; a full-size
              run (not BENCH_QUICK) also replaces its own section of docs/BENCHMARKS.md
  --only knowledge  (or BENCH_ONLY=knowledge) runs only the knowledge section (issue 39: recall@5 and MRR
              of the docs question set for the offline embedder and through the openai client,
              indexing and search at 10 000 chunks): prints its section and targets, results to a
              temporary file; a full-size run (not BENCH_QUICK) also replaces its own section of
              docs/BENCHMARKS.md
  --only tracing    (or BENCH_ONLY=tracing) runs only the tracing-cost phase (two deployments, tracing
              off and on, c=1): prints its section and targets on stdout, results to a temporary file
  --cluster   runs only the cluster scaling phase (a three-node cluster, R3: 1, 2, 4 runners and
              2, 4, 8 workers; R3 against R1; a few minutes): writes docs/benchmarks-cluster.json
              and its own section of docs/BENCHMARKS.md (the rest is left alone); a smoke run
              (BENCH_CLUSTER_TURNS below 200) prints the section and leaves docs/ alone
  --scale     runs only the CPU-slice scaling phase (issue 36: k = 1, 2, 4 slices of a runner and
              2 workers in cgroups of a fixed quota, on 1, 3 and 5 NATS nodes with S = 1 event
              stream and on 5 with S = 5, then unsliced 1 against 3 runners, then 2 runners joining
              1 mid-load): writes docs/benchmarks-scale.json and its own section of
              docs/BENCHMARKS.md; a smoke run (BENCH_SCALE_TURNS below 100, or only some
              BENCH_SCALE_PHASES) leaves docs/ alone
  --help      prints this

  BENCH_QUICK=1          short phases (noisier numbers; the report says so)
  BENCH_QUIET_WAIT_S=N   how long to wait for a quiet machine before starting (default 60)
  BENCH_BUSY_SESSIONS=N  sessions of the overload phase (default 1000)
  BENCH_IDLE_SESSIONS=N  idle sessions at the last step (default 10000; the first step is a tenth)
  BENCH_KILLS=N          runners killed in the takeover phase (default 10)
  BENCH_BURST_SESSIONS=N sessions submitting at once in each burst (default 2000)
  BENCH_BURST_RUNS=N     bursts, each on a fresh deployment (default 3)
  BENCH_SOAK_TURNS=N     turns of the soak (default 20000), from BENCH_SOAK_CLIENTS sessions (default 50)
  BENCH_LOAD_KILLS=N     runners killed with turns in flight (default 5; BENCH_LOAD_IN_FLIGHT, default 100)
  BENCH_DURABILITY_TURNS=N  turns of the durability section's one session (default 500, quick 50)
  BENCH_DURABILITY_KILLS=N  runners killed on each deployment of the durability section (default 10, quick 3)
  BENCH_KNOWLEDGE_CHUNKS=N  chunks of the knowledge section's speed run (default 10000, the target's size)
  BENCH_CLUSTER_TURNS=N  measured turns per point of --cluster (default 200; e.g. 20 for a smoke run)
  BENCH_CLUSTER_SESSIONS=N  concurrent sessions of --cluster (default 8)
  BENCH_SCALE_TURNS=N    measured turns per slice per point of --scale (default 100; e.g. 20 for a smoke run)
  BENCH_SCALE_SESSIONS=N concurrent sessions per slice of --scale (default 4)
  BENCH_SCALE_QUOTA=C    cores of each runner-and-workers slice (default 0.5; NATS: BENCH_SCALE_NATS_QUOTA, 1)
  BENCH_SCALE_SERIES=L   series of --scale, nodes:streams (NATS nodes, event streams S; default 1:1,3:1,5:1,5:5)
  BENCH_SCALE_PHASES=L   phases of --scale to run, of series,unsliced,join (default all; e.g. join for a smoke run)
  BENCH_SCALE_PROFILE=1  CPU-profile --scale's runners and workers over each measured window: self time per
                         turn by function and origin, printed and kept in the JSON (a smoke run: the profiler costs CPU)
`;

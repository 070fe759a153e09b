import { type FSWatcher, readFileSync, watch } from "node:fs";
import { dirname } from "node:path";
import { messageOf } from "../errors.ts";
import { type ReadyDetail, spawnConclave } from "./childProcess.ts";
import { AGENTS_WORKER, type LocalCluster, readyWithin } from "./localCluster.ts";
import { localModuleGraph } from "./moduleGraph.ts";
import { supervise } from "./supervisor.ts";

/** How long the files stay quiet before a reload: an editor's save is often several writes. */
const SETTLE_MS = 150;

export interface AgentReloadOptions {
  /** The running stack; its agents worker (AGENTS_WORKER) is the one replaced. */
  cluster: LocalCluster;
  /** The agents worker's `conclave` arguments, as the stack started it. */
  args: string[];
  /** The module files of `--agents` and `--tools`, as the user wrote them (the reload line names them). */
  modules: string[];
  log: (line: string) => void;
  /** How long the new worker may take to serve before the reload counts as failed. */
  readyTimeoutMs: number;
}

/** Watching the agent modules; `stop` ends the watch and waits for (or abandons) a reload under way. */
export interface AgentReload {
  stop(): Promise<void>;
}

/**
 * Reloads the agents worker when an agent or tool module, or a project file it imports, changes.
 *
 * The worker process is started again rather than the modules imported again inside it: Node's
 * ESM loader keeps every module it loaded for the life of the process, and a cache-busting query
 * (`./agents.js?v=2`) only reloads the file it is put on, not the project files that file imports,
 * which would keep their old code (and each version would stay in memory). A new process loads
 * all of it fresh. It starts beside the old one and takes over only once it serves: the runner,
 * NATS and the sessions are not touched, so a session's history stays and its next turn reaches
 * the new code. A module that fails to load leaves the old worker serving, and is said in one line.
 */
export function watchAgentModules(options: AgentReloadOptions): AgentReload {
  const { cluster, args, modules, log, readyTimeoutMs } = options;
  let files = localModuleGraph(modules);
  let contents = snapshot(files);
  let watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  let running: Promise<void> = Promise.resolve();
  let candidate: ReturnType<typeof spawnConclave> | undefined;

  const rewatch = () => {
    for (const watcher of watchers) watcher.close();
    // Directories, not files: an editor that saves by writing a new file and renaming it over the
    // old one leaves a file watch on the deleted inode.
    watchers = [...new Set(files.map((file) => dirname(file)))].map((dir) =>
      watch(dir, { persistent: false }, () => schedule()).on("error", () => {}),
    );
  };
  const schedule = () => {
    if (stopping) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running.then(check).catch((error: unknown) => log(`reload failed: ${messageOf(error)}`));
    }, SETTLE_MS);
  };
  const check = async () => {
    if (stopping) return;
    const now = snapshot(files);
    if (files.every((file) => now.get(file) === contents.get(file))) return;
    contents = now;
    await reload();
    files = localModuleGraph(modules);
    contents = snapshot(files);
    rewatch();
  };
  const reload = async () => {
    const next = spawnConclave(AGENTS_WORKER, args, cluster.env, readyTimeoutMs, { stderr: "pipe" });
    candidate = next;
    let errors = "";
    let serving = false;
    next.child.stderr?.on("data", (chunk: Buffer) => {
      if (serving) process.stderr.write(chunk);
      else errors += chunk.toString();
    });
    let hosted: ReadyDetail;
    try {
      hosted = (await next.announced) ?? {};
    } catch (error) {
      candidate = undefined;
      if (!stopping)
        log(`reload failed: ${failureOf(errors) ?? messageOf(error)} (the previous agents keep answering)`);
      return;
    }
    serving = true;
    if (errors) process.stderr.write(errors);
    candidate = undefined;
    if (stopping) return void (await next.stop());
    // The supervisor's first process is the one already serving; a restart after a crash starts a new one.
    let first: typeof next | undefined = next;
    const supervised = supervise(AGENTS_WORKER, args, cluster.env, {
      log,
      spawn: (name, argv, env) => {
        const started = first ?? readyWithin(readyTimeoutMs)(name, argv, env);
        first = undefined;
        return started;
      },
    });
    await cluster.replace(supervised);
    log(`reloaded ${describeHosted(modules, hosted)}`);
  };

  rewatch();
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      await candidate?.stop();
      await running;
    },
  };
}

/** Each file's text now (undefined for one that is gone), to tell a real change from a touch. */
function snapshot(files: readonly string[]): Map<string, string | undefined> {
  return new Map(
    files.map((file) => {
      try {
        return [file, readFileSync(file, "utf8")];
      } catch {
        return [file, undefined];
      }
    }),
  );
}

/** The one line a worker that failed to start printed: its `conclave worker: …` failure, else its last line. */
export function failureOf(stderr: string): string | undefined {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  const failure = lines.findLast((line) => line.startsWith("conclave worker: ")) ?? lines.at(-1);
  return failure?.replace(/^conclave worker: /, "");
}

/** `agents from ./a.js (2 agents, 1 tool)`: what a reload brought up. */
function describeHosted(modules: readonly string[], hosted: ReadyDetail): string {
  const count = (value: unknown, noun: string) => {
    const n = Array.isArray(value) ? value.length : 0;
    return `${n} ${noun}${n === 1 ? "" : "s"}`;
  };
  const tools = Array.isArray(hosted.tools) && hosted.tools.length > 0 ? `, ${count(hosted.tools, "tool")}` : "";
  return `agents from ${modules.join(", ")} (${count(hosted.agents, "agent")}${tools})`;
}

/**
 * The A2A tasks the gateway remembers, bounded (docs/gateway.md#limits): at
 * most `maxTasks`, none older than `ttlMs` since its last update, and at most
 * `maxBytes` of them as JSON; past any bound the least recently updated go
 * first. A finished task keeps its status and artifacts (its result) but not
 * its history, so a flood of tasks costs a bounded amount of memory. What a
 * task did lives in Conclave (its session's events), not here; the tasks of
 * an erased session are dropped (`drop`).
 */
import { type ListTasksRequest, type ListTasksResponse, type Task, TaskState } from "@a2a-js/sdk";
import { InMemoryTaskStore, type ServerCallContext, type TaskStore } from "@a2a-js/sdk/server";

/** The bounds of a store. */
export interface TaskStoreLimits {
  maxTasks: number;
  ttlMs: number;
  maxBytes: number;
  /** Told of each task forgotten (the executor drops what it holds for it). */
  onForget?: (taskId: string) => void;
  now?: () => number;
}

interface Kept {
  task: Task;
  scope: string;
  bytes: number;
  savedAt: number;
}

const FINISHED = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** Whose tasks a call sees: its tenant and user, as the SDK's own store scopes them. */
const scopeOf = (context: ServerCallContext) => `${context.tenant ?? ""}\u0000${context.user?.userName || "unknown"}`;

/** An in-memory TaskStore with a count, an age and a size bound. */
export class BoundedTaskStore implements TaskStore {
  /** By scope and id; least recently saved first. */
  private readonly tasks = new Map<string, Kept>();
  /** Tasks dropped by {@link drop} (scope and id), most recent last: a call still ending one does not save it again. */
  private readonly dropped = new Set<string>();
  private bytes = 0;
  private readonly now: () => number;

  constructor(private readonly limits: TaskStoreLimits) {
    this.now = limits.now ?? Date.now;
  }

  /** Tasks kept, and their size as JSON. */
  get usage(): { tasks: number; bytes: number } {
    return { tasks: this.tasks.size, bytes: this.bytes };
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const scope = scopeOf(context);
    const key = `${scope}\u0000${task.id}`;
    if (this.dropped.has(key)) return;
    const kept = structuredClone(task);
    // A finished task is its result: the messages that led to it are in its session's events.
    if (task.status && FINISHED.has(task.status.state)) kept.history = [];
    const bytes = Buffer.byteLength(JSON.stringify(kept));
    this.remove(key);
    this.tasks.set(key, { task: kept, scope, bytes, savedAt: this.now() });
    this.bytes += bytes;
    this.trim(key);
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    this.trim();
    const kept = this.tasks.get(`${scopeOf(context)}\u0000${taskId}`);
    return kept ? structuredClone(kept.task) : undefined;
  }

  /** Lists as the SDK's own store does (filters, order, pages), over the tasks this store still keeps. */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    this.trim();
    const scope = scopeOf(context);
    const view = new InMemoryTaskStore();
    for (const kept of this.tasks.values()) if (kept.scope === scope) await view.save(kept.task, context);
    return view.list(params, context);
  }

  /**
   * Forgets every task `match` picks (their session was erased), as if they
   * never were: get and list find none, and a call of one still ending does
   * not save it again. How many were dropped.
   */
  drop(match: (task: Task) => boolean): number {
    let count = 0;
    for (const [key, kept] of [...this.tasks]) {
      if (!match(kept.task)) continue;
      this.remove(key);
      this.limits.onForget?.(kept.task.id);
      this.dropped.add(key);
      count += 1;
    }
    // Remembered up to as many as the store keeps tasks, the oldest forgotten first.
    for (const key of this.dropped) {
      if (this.dropped.size <= this.limits.maxTasks) break;
      this.dropped.delete(key);
    }
    return count;
  }

  private remove(key: string): void {
    const kept = this.tasks.get(key);
    if (!kept) return;
    this.tasks.delete(key);
    this.bytes -= kept.bytes;
  }

  /** Forgets the least recently saved tasks until every bound holds; `keep` (the one just saved) goes last. */
  private trim(keep?: string): void {
    const oldest = this.now() - this.limits.ttlMs;
    for (const [key, kept] of this.tasks) {
      const over = this.tasks.size > this.limits.maxTasks || this.bytes > this.limits.maxBytes || kept.savedAt < oldest;
      if (!over || (key === keep && this.tasks.size === 1)) break;
      if (key === keep) continue;
      this.remove(key);
      this.limits.onForget?.(kept.task.id);
    }
  }
}

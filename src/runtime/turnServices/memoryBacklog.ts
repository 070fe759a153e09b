import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { RemoteCallError } from "../../bus/errors.ts";
import { JsonKv } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import type { MemoryCommitReply } from "../../contracts/memory.ts";
import { Episode } from "../../contracts/workspace.ts";
import { pause } from "../../deadline.ts";

/** Most commits a session's backlog keeps (an outage of more turns loses the oldest ones). */
export const MAX_OWED_COMMITS = 20;

/** Most sessions a runner remembers as owing nothing (the oldest is forgotten, and read again). */
const MAX_TRUSTED_SESSIONS = 10_000;

const Backlog = z.object({ episodes: z.array(Episode) });

const keyOf = (sessionId: string) => `uncommitted.${sessionId}`;

/**
 * The memory commits a session still owes its memory: a turn's commit that got
 * no answer (no memory worker, or none in time) is kept here until it is made,
 * in the `conclave_sessions` KV bucket (`uncommitted.<session_id>`), in turn
 * order, so a runner that did not make it (another one, or this one restarted)
 * makes it before the session's next turn. See {@link settleCommits}.
 */
export class MemoryBacklog {
  /**
   * Sessions this runner read with nothing owed, until when it trusts that
   * without reading again: a turn's retrieval and commit would otherwise read
   * the bucket twice on every turn. Only the runner hosting a session owes its
   * commits, so the copy goes stale only when the session moves between
   * runners within this time.
   */
  readonly #clear = new Map<string, number>();

  private constructor(
    private readonly kv: JsonKv<typeof Backlog>,
    private readonly trustClearMs: number,
  ) {}

  /** `trustClearMs`: how long a session read with nothing owed is not read again. Default 30 s. */
  static async open(nc: NatsConnection, trustClearMs = 30_000): Promise<MemoryBacklog> {
    return new MemoryBacklog(await JsonKv.open(nc, buckets.sessions, Backlog), trustClearMs);
  }

  /** True while the session was read with nothing owed, recently enough to trust it (no read needed). */
  knownClear(sessionId: string): boolean {
    const clearUntil = this.#clear.get(sessionId);
    return clearUntil !== undefined && clearUntil > Date.now();
  }

  /** The session's owed commits, oldest turn first. */
  async owed(sessionId: string): Promise<Episode[]> {
    if (this.knownClear(sessionId)) return [];
    const episodes = (await this.kv.get(keyOf(sessionId)))?.value.episodes ?? [];
    this.#markClear(sessionId, episodes.length === 0);
    return episodes;
  }

  #markClear(sessionId: string, clear: boolean): void {
    this.#clear.delete(sessionId); // re-inserted last: the map stays in expiry order, and bounded
    if (!clear) return;
    this.#clear.set(sessionId, Date.now() + this.trustClearMs);
    if (this.#clear.size > MAX_TRUSTED_SESSIONS) this.#clear.delete(this.#clear.keys().next().value as string);
  }

  /** Keeps the episode's commit as owed (once per turn; its time stamped now if it had none). */
  async keep(episode: Episode): Promise<void> {
    this.#markClear(episode.session_id, false);
    const stamped = { ...episode, ts: episode.ts || Date.now() };
    await this.kv.update(keyOf(episode.session_id), (current) => {
      const others = (current?.episodes ?? []).filter((owed) => owed.turn_id !== episode.turn_id);
      const episodes = [...others, stamped].sort((a, b) => a.turn_id - b.turn_id).slice(-MAX_OWED_COMMITS);
      return { episodes };
    });
  }

  /** The commits of these turns were made: no longer owed. */
  async forget(sessionId: string, turnIds: readonly number[]): Promise<void> {
    if (turnIds.length === 0) return;
    let left = -1;
    await this.kv.update(keyOf(sessionId), (current) => {
      left = current?.episodes.filter((owed) => !turnIds.includes(owed.turn_id)).length ?? 0;
      if (!current?.episodes.some((owed) => turnIds.includes(owed.turn_id))) return null;
      return { episodes: current.episodes.filter((owed) => !turnIds.includes(owed.turn_id)) };
    });
    this.#markClear(sessionId, left === 0);
  }
}

export interface SettleOptions {
  /** Where owed commits are kept; null: nowhere (a commit that gets no answer is then lost). */
  backlog: MemoryBacklog | null;
  /** One commit request to the memory service. */
  commit: (episode: Episode, signal: AbortSignal) => Promise<MemoryCommitReply>;
  signal: AbortSignal;
  /** How long commits that get no answer are tried again (0: each once). */
  retryMs: number;
}

/** A commit that got no answer: no worker serves memory, none answered in time, or the stage ended first. */
const unanswered = (error: unknown, signal: AbortSignal): boolean =>
  signal.aborted || (error instanceof RemoteCallError && (error.code === "no_responders" || error.code === "timeout"));

/**
 * Memory learns a session's turns in their order, each once (a commit is
 * idempotent by turn id, so one made twice is learned once). This makes the
 * commits the session owes first, oldest first, then `episode`'s if given, and
 * returns the reply to it. While no worker answers (no_responders, timeout)
 * the commits are tried again, for `retryMs`; `episode`'s is kept as owed from
 * its first unanswered try, and left owed if it is still not made: then the
 * error says so. An owed commit the memory refuses (an error of its own) is
 * dropped, so it cannot block the session's memory for good; `episode`'s
 * refusal is thrown as it is.
 */
export async function settleCommits(
  sessionId: string,
  episode: Episode | null,
  { backlog, commit, signal, retryMs }: SettleOptions,
): Promise<MemoryCommitReply | undefined> {
  // An unreadable backlog (the bucket unreachable, a damaged value) is no reason to hold this commit back.
  const owed = backlog ? await backlog.owed(sessionId).catch(() => []) : [];
  const queue = [...owed.filter((item) => item.turn_id !== episode?.turn_id), ...(episode ? [episode] : [])];
  const kept = new Set(owed.map((item) => item.turn_id));
  const made: number[] = [];
  const started = Date.now();
  let reply: MemoryCommitReply | undefined;
  let wait = 100;
  try {
    for (let at = 0; at < queue.length; ) {
      const next = queue[at] as Episode;
      try {
        const answer = await commit(next, signal);
        if (next === episode) reply = answer;
        made.push(next.turn_id);
        at++;
      } catch (error) {
        if (!unanswered(error, signal)) {
          if (next === episode) throw error;
          made.push(next.turn_id);
          at++;
          continue;
        }
        if (episode && backlog && !kept.has(episode.turn_id)) {
          const stored = await backlog.keep(episode).then(
            () => true,
            () => false,
          );
          if (stored) kept.add(episode.turn_id);
        }
        if (signal.aborted || Date.now() - started + wait > retryMs) {
          if (!episode || !kept.has(episode.turn_id) || !(error instanceof RemoteCallError)) throw error;
          const note = `${error.message}; the commit is kept and made before the session's next turn`;
          throw new RemoteCallError(error.subject, error.code, note);
        }
        await pause(wait, signal);
        wait = Math.min(wait * 2, 1_000);
      }
    }
    return reply;
  } finally {
    const done = made.filter((turnId) => kept.has(turnId));
    if (backlog && done.length > 0) await backlog.forget(sessionId, done).catch(() => {});
  }
}

import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { JsonKv } from "../bus/jsonKv.ts";
import { buckets } from "../bus/subjects.ts";
import { PipelineChoice } from "../contracts/pipeline.ts";
import { SessionSnapshot } from "./checkpoints/sessionSnapshot.ts";
import { TapeState } from "./checkpoints/state.ts";
import { tapeAtTurn } from "./checkpoints/tape.ts";
import { storedSnapshot, withSummaryText } from "./sessionSummary.ts";

export { SessionSnapshot } from "./checkpoints/sessionSnapshot.ts";

/** Largest domains part a checkpoint keeps (UTF-16 units of its JSON; a KV value is at most 1 MB). */
const MAX_DOMAINS_BYTES = 512 * 1_024;

/** Sessions whose turn counter a runner remembers (a few hundred bytes each). */
const COUNTERS_CACHED = 10_000;

const Counter = z.object({
  last_turn_id: z.number().int().min(0),
  last_done_turn_id: z.number().int().min(0).default(0),
  /** The session chose a pipeline (stored as `pipeline.<session>`): only such sessions read it. */
  chose_pipeline: z.boolean().optional(),
});
const Checkpoint = z.object({
  through_turn_id: z.number().int().min(0),
  snapshot: SessionSnapshot,
  /** Every domain's state through the turn (src/runtime/checkpoints); absent in checkpoints written before it existed. */
  domains: TapeState.optional(),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** A reserved turn id, and whether the session has chosen a pipeline (as the counter written says). */
export interface TurnReservation {
  turnId: number;
  sessionChosePipeline: boolean;
}

/** What a tape replay reads of the session store. */
export interface TapeCheckpointStore {
  checkpoint(sessionId: string): Promise<Checkpoint | null>;
  lastTurnId(sessionId: string): Promise<number>;
}

/**
 * Per-session state shared by every runner, in the `conclave_sessions` KV
 * bucket: the turn counter (ids handed out with compare-and-set, so they
 * continue across restarts and are never given twice), the
 * session snapshot after each turn, replay checkpoints, and the pipeline the
 * session chose.
 */
export class SessionStore {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly counters: JsonKv<typeof Counter>,
    private readonly snapshots: JsonKv<typeof SessionSnapshot>,
    private readonly checkpoints: JsonKv<typeof Checkpoint>,
    private readonly pipelines: JsonKv<typeof PipelineChoice>,
  ) {}

  static async open(nc: NatsConnection): Promise<SessionStore> {
    const open = <S extends z.ZodType>(schema: S, cacheRevisions = 0) =>
      JsonKv.open(nc, buckets.sessions, schema, { cacheRevisions });
    // The counters are written by the runner hosting the session at each submission and end: it reads them once.
    return new SessionStore(
      nc,
      await open(Counter, COUNTERS_CACHED),
      await open(SessionSnapshot),
      await open(Checkpoint),
      await open(PipelineChoice),
    );
  }

  /** The last turn id given out for the session (0 for a new session). */
  async lastTurnId(sessionId: string): Promise<number> {
    return (await this.counters.get(`counter.${sessionId}`))?.value.last_turn_id ?? 0;
  }

  /**
   * Reserves the session's next turn id. `choosingPipeline`: the submission
   * chose a pipeline, stored already with `choosePipeline`; the counter then
   * says so, and `pipeline` reads it from the next turn on.
   */
  async reserveTurnId(sessionId: string, options: { choosingPipeline?: boolean } = {}): Promise<TurnReservation> {
    const next = await this.counters.update(`counter.${sessionId}`, (current) => ({
      ...current,
      last_turn_id: (current?.last_turn_id ?? 0) + 1,
      last_done_turn_id: current?.last_done_turn_id ?? 0,
      ...(options.choosingPipeline ? { chose_pipeline: true } : {}),
    }));
    return { turnId: next!.last_turn_id, sessionChosePipeline: next!.chose_pipeline === true };
  }

  /** True while a turn of the session is accepted and not yet finished. */
  async busy(sessionId: string): Promise<boolean> {
    const counter = (await this.counters.get(`counter.${sessionId}`))?.value;
    return !!counter && counter.last_done_turn_id < counter.last_turn_id;
  }

  async markDone(sessionId: string, turnId: number): Promise<void> {
    await this.counters.update(`counter.${sessionId}`, (current) =>
      current && current.last_done_turn_id < turnId ? { ...current, last_done_turn_id: turnId } : null,
    );
  }

  async snapshot(sessionId: string): Promise<SessionSnapshot | null> {
    return (await this.snapshots.get(`snapshot.${sessionId}`))?.value ?? null;
  }

  /**
   * The session's snapshot as a runner hosting it needs it: its compaction summary's text read back
   * from the log (the stored snapshot keeps a reference: src/runtime/sessionSummary.ts).
   */
  async loadSnapshot(sessionId: string): Promise<SessionSnapshot | null> {
    const snapshot = await this.snapshot(sessionId);
    if (!snapshot?.context_arena?.summary || snapshot.context_arena.summary.text !== undefined) return snapshot;
    return withSummaryText({ js: jetstream(this.nc), jsm: await jetstreamManager(this.nc) }, sessionId, snapshot);
  }

  /** Stores the session's snapshot, its compaction summary by reference (no user text in a rewritten key). */
  async saveSnapshot(sessionId: string, snapshot: SessionSnapshot): Promise<void> {
    await this.snapshots.put(`snapshot.${sessionId}`, storedSnapshot(snapshot));
  }

  /**
   * The pipeline the session chose with a submission (`TurnSubmission.pipeline`); null: it chose none.
   * Whether it chose is read from this runner's copy of the session's counter (no round trip for a
   * session it served before, which is why the flag lives there): a copy gone stale shows in
   * `reserveTurnId`'s `sessionChosePipeline`.
   */
  async pipeline(sessionId: string): Promise<PipelineChoice | null> {
    if (!(await this.counters.recall(`counter.${sessionId}`))?.value.chose_pipeline) return null;
    return (await this.pipelines.get(`pipeline.${sessionId}`))?.value ?? null;
  }

  /** Stores the session's pipeline: its later turns run it, on any runner. */
  async choosePipeline(sessionId: string, pipeline: PipelineChoice): Promise<void> {
    await this.pipelines.put(`pipeline.${sessionId}`, pipeline);
  }

  async checkpoint(sessionId: string): Promise<Checkpoint | null> {
    return (await this.checkpoints.get(`checkpoint.${sessionId}`))?.value ?? null;
  }

  /**
   * Stores the session's replay checkpoint. One given without `domains` gets
   * them here: every domain folded through its turn from the log (from the
   * previous checkpoint on). When that fold fails, the checkpoint is stored
   * without them (a replay then folds the domains from the start): a turn's
   * end is never held up by it.
   */
  async saveCheckpoint(sessionId: string, checkpoint: Checkpoint): Promise<void> {
    let domains = checkpoint.domains;
    if (!domains) {
      try {
        const clients = { js: jetstream(this.nc), jsm: await jetstreamManager(this.nc) };
        domains = await tapeAtTurn(clients, this, sessionId, checkpoint.through_turn_id);
      } catch {
        domains = undefined;
      }
    }
    // A session's cost rows grow with its turns: a checkpoint too large for a KV value keeps the snapshot alone.
    if (domains && JSON.stringify(domains).length > MAX_DOMAINS_BYTES) domains = undefined;
    // The compaction summary by reference, as in the snapshot.
    await this.checkpoints.put(`checkpoint.${sessionId}`, {
      ...checkpoint,
      snapshot: storedSnapshot(checkpoint.snapshot),
      ...(domains ? { domains: { ...domains, session: storedSnapshot(domains.session) } } : {}),
    });
  }

  /**
   * Starts a session at turn `turnId` (a fork): its counter says that turn is
   * the last given out and done, so its next turn is `turnId + 1`. False when
   * the session exists already (its counter is there): nothing is changed.
   */
  async startAt(sessionId: string, turnId: number): Promise<boolean> {
    return this.counters.create(`counter.${sessionId}`, { last_turn_id: turnId, last_done_turn_id: turnId });
  }
}

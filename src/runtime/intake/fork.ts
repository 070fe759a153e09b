/**
 * Forking a session (`conclave.session.fork.<session>`, any runner answers):
 * the mirror image of an erase (erase.ts). The new session starts as the
 * source stood after the fork turn, across every domain, and goes on on its
 * own; the source is only read. See docs/tape.md, "Fork".
 *
 * What the fork holds, store by store: its turn counter at the fork turn
 * (its next turn follows it); its session snapshot and a replay checkpoint
 * folded at the fork point; the source's ledger events up to the fork turn's
 * end, copied to its log; the memory nodes and edges learned up to the fork
 * turn (episodes by their turn, facts, threads and procedures by the turn
 * that last changed them, episodes as their episodic nodes); and as its first
 * event a SESSION_FORKED (its fork turn's only event) naming the source and
 * carrying the source's session, cost and memory-digest state. Schedules are
 * not copied: a schedule fires turns into its own session. The sessions
 * bucket notes the fork (`forks.<source>.<fork>`): an erase of the source
 * names or erases its forks (eraseForks.ts).
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeRecord } from "../../bus/codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { type ForkPoint, type ForkRecord, ForkRequest } from "../../contracts/fork.ts";
import { messageOf, singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { openMemoryGraph } from "../../memory/graph/open.ts";
import type { MemoryGraphArtifact, MemoryNode } from "../../memory/graph/types.ts";
import type { Logger } from "../../telemetry/log.ts";
import { tapeAtTurn } from "../checkpoints/tape.ts";
import { readLogSteps, readTurn, type TapeClients } from "../checkpoints/tapeReader.ts";
import type { SessionStore } from "../sessionStore.ts";
import { withSummaryText } from "../sessionSummary.ts";
import { recordFork } from "./eraseForks.ts";

/** What serving fork requests needs. */
export interface ForkDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  sessions: SessionStore;
  log: Logger;
  /** Where the memory graph's backend is read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * The ledgers: the fork's are projected from its copied events, so its first turn reads them (the
   * projection is what a turn reads). Absent: projected on the fork's first full read.
   */
  ledgers?: Pick<LedgerStore, "state">;
}

/** Largest accepted fork request, in bytes. */
const MAX_FORK_BYTES = 1_024;

/** Serves one fork request: the reply is the ForkRecord, or an error naming what is wrong. */
export async function serveFork(deps: ForkDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("forbidden", "forking is not offered to tenant accounts");
    const request = decodeMessage(msg, ForkRequest, `fork request for session ${view}`, MAX_FORK_BYTES);
    const record = await forkSession(deps, sessionId, request);
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, record);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`fork on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}

/** The source's turn the fork starts after: the one named, or the last completed at the stream position. */
async function forkTurn(clients: TapeClients, sessionId: string, lastTurnId: number, at: ForkPoint): Promise<number> {
  if ("turn" in at) {
    if (at.turn > lastTurnId)
      throw new HandlerError("not_found", `session ${sessionId} has no turn ${at.turn} (its last is ${lastTurnId})`);
    const turn = await readTurn(clients, sessionId, at.turn);
    if (!turn.events.some((event) => event.kind === "TURN_COMPLETED"))
      throw new HandlerError(
        "conflict",
        `turn ${at.turn} of session ${sessionId} has not completed: fork at one that has`,
      );
    return at.turn;
  }
  let found = 0;
  for (let turnId = 1; turnId <= lastTurnId; turnId++) {
    const turn = await readTurn(clients, sessionId, turnId);
    if (turn.end.seq > at.seq) break;
    if (turn.events.some((event) => event.kind === "TURN_COMPLETED")) found = turnId;
  }
  if (found === 0) throw new HandlerError("not_found", `session ${sessionId} has no turn completed by seq ${at.seq}`);
  return found;
}

/** The arena's fields that name the last ledger event of a kind it consumed, by the event's stream sequence. */
const CONSUMED_SEQ = {
  SUPPLEMENT_COMMITTED: "supplement_seq",
  COMPACTION_REQUESTED: "compaction_request_seq",
} as const;
type ConsumedSeq = (typeof CONSUMED_SEQ)[keyof typeof CONSUMED_SEQ];

/** The arena's field naming the last consumed event of `kind`; undefined for a kind it does not consume. */
const consumedSeqOf = (kind: string): ConsumedSeq | undefined =>
  Object.hasOwn(CONSUMED_SEQ, kind) ? CONSUMED_SEQ[kind as keyof typeof CONSUMED_SEQ] : undefined;

/** The turn a memory node was learned (last changed) in; null when it cannot tell. */
function learnedIn(node: MemoryNode): number | null {
  const value = node.kind === "episodic" ? node.data.turn_id : (node.data.updated_turn ?? node.data.evolved_at_turn);
  return typeof value === "number" ? value : null;
}

/** The source's memory graph as it stood after the fork turn, as the fork's. */
export function graphAtTurn(source: MemoryGraphArtifact, forkId: string, turnId: number): MemoryGraphArtifact {
  const nodes = source.nodes.flatMap((node): MemoryNode[] => {
    if (node.kind === "runtime_state") {
      // The fork's next commit (turn + 1) must be learned: the cadence goes back to the fork turn.
      const last = Number(node.data.last_extraction_turn ?? 0);
      return [{ ...node, session_id: forkId, data: { ...node.data, last_extraction_turn: Math.min(last, turnId) } }];
    }
    const turn = learnedIn(node);
    return turn !== null && turn <= turnId ? [{ ...node, session_id: forkId }] : [];
  });
  const kept = new Set(nodes.map((node) => node.id));
  const edges = source.edges
    .filter((edge) => kept.has(edge.from) && kept.has(edge.to))
    .map((edge) => ({ ...edge, session_id: forkId }));
  return { version: 1, session_id: forkId, nodes, edges };
}

/**
 * Forks `sourceId` at `request.at` as `request.as`. Refuses (`conflict`) a
 * fork id that is in use (it has a turn counter: a session ever used,
 * erased ones included) and a fork turn that has not completed.
 */
export async function forkSession(deps: ForkDeps, sourceId: string, request: ForkRequest): Promise<ForkRecord> {
  const forkId = request.as;
  if (forkId === sourceId) throw new HandlerError("invalid_request", "a session cannot be forked as itself");
  const clients = { js: deps.js, jsm: deps.jsm };
  const lastTurnId = await deps.sessions.lastTurnId(sourceId);
  if (lastTurnId === 0) throw new HandlerError("not_found", `no session ${sourceId}`);
  const turnId = await forkTurn(clients, sourceId, lastTurnId, request.at);
  if ((await deps.sessions.lastTurnId(forkId)) > 0)
    throw new HandlerError("conflict", `session ${forkId} exists: fork as a new session id`);
  const folded = await tapeAtTurn(clients, deps.sessions, sourceId, turnId);
  // The source's compaction summary in full (a fold from a checkpoint has its reference): the fork's log holds it.
  const state = { ...folded, session: await withSummaryText(clients, sourceId, folded.session) };
  const end = (await readTurn(clients, sourceId, turnId)).end;
  // Claimed first: of two forks to the same id, one goes on.
  if (!(await deps.sessions.startAt(forkId, turnId)))
    throw new HandlerError("conflict", `session ${forkId} exists: fork as a new session id`);

  // Indexed at once: an erase of the source finds the fork even if the copy below is cut short.
  await recordFork(deps.nc, sourceId, forkId, turnId);
  const copied: Record<string, number> = {};
  // The ledger events up to the fork turn's end, in their order: the fork's ledgers fold from its own log.
  const ledger = await readLogSteps(
    clients,
    sourceId,
    { through_turn_id: 0, events_seq: 0, schedules_seq: Number.MAX_SAFE_INTEGER, turns_seq: 0 },
    { events_seq: end.seq, schedules_time: 0 },
  );
  copied.ledger_events = 0;
  const eventStreams = await eventStreamCount(deps.jsm);
  // The arena names the last supplement and the last compaction request it consumed by their events'
  // sequences: the fork's copies have their own.
  const sourceArena = state.session.context_arena;
  const forkConsumed: Partial<Record<ConsumedSeq, number>> = {};
  for (const step of ledger) {
    if (step.kind !== "ledger") continue;
    const ack = await deps.js.publish(
      subjects.ledgerEvents(forkId, eventStreams),
      encodeRecord({ ...step.event, session_id: forkId }),
    );
    const field = consumedSeqOf(step.event.kind);
    const consumed = field ? sourceArena?.[field] : undefined;
    if (field && consumed !== undefined && step.seq <= consumed) forkConsumed[field] = ack.seq;
    copied.ledger_events++;
  }
  if (sourceArena) {
    const { supplement_seq: _supplement, compaction_request_seq: _request, ...arena } = sourceArena;
    state.session = { ...state.session, context_arena: { ...arena, ...forkConsumed } };
  }
  // What a turn reads of the ledgers is their projection: made now, the fork's first turn has the digest, the
  // activated skills, the compaction request and the supplements the source had at the fork point.
  // Not made, the fork still works: its ledgers are projected on their first full read (a `truth` or `task` call).
  await deps.ledgers
    ?.state(forkId)
    .catch((error: unknown) =>
      deps.log.warn(`fork ${forkId}: its ledgers are not projected yet: ${singleLine(messageOf(error))}`),
    );
  const graph = await openMemoryGraph({ nc: deps.nc, env: deps.env ?? process.env });
  try {
    const artifact = graphAtTurn(await graph.exportSession(sourceId), forkId, turnId);
    await graph.importSession(artifact);
    copied.memory_nodes = artifact.nodes.length;
    copied.memory_edges = artifact.edges.length;
    // Episodes travel as the graph's episodic nodes (recall reads them there); the CONCLAVE_MEMORY stream is
    // the memory service's to write, and the runner role may not publish to it.
    copied.episodes = artifact.nodes.filter((node) => node.kind === "episodic").length;
  } finally {
    await graph.close();
  }

  const forked: EngineEvent = {
    session_id: forkId,
    turn_id: turnId,
    seq: 0,
    ts_monotonic: performance.timeOrigin + performance.now(),
    kind: "SESSION_FORKED",
    payload: {
      from_session: sourceId,
      at_turn: turnId,
      state: { session: state.session, cost: state.cost, memory: state.memory },
      copied,
    },
  };
  await deps.js.publish(subjects.turnEvents(forkId, turnId, eventStreams), encodeRecord(forked), {
    msgID: `${forkId}.${turnId}.0`,
  });
  // The fork's own checkpoint, folded from its log like any other (the SESSION_FORKED and the copied ledger events).
  const domains = await tapeAtTurn(clients, deps.sessions, forkId, turnId);
  await deps.sessions.saveSnapshot(forkId, domains.session);
  await deps.sessions.saveCheckpoint(forkId, { through_turn_id: turnId, snapshot: domains.session, domains });
  deps.log.info(`session ${sourceId} forked at turn ${turnId} as ${forkId}`);
  return { session_id: forkId, from_session: sourceId, at_turn: turnId, next_turn_id: turnId + 1, copied };
}

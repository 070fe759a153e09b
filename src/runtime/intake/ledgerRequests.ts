import { decodeJson } from "../../bus/codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { setting } from "../../config/load.ts";
import { arenaPolicyFromEnv } from "../../context/arena.ts";
import { committedOf, pendingSupplements, planSupplement } from "../../context/supplemental.ts";
import type { ArenaPolicy } from "../../contracts/context.ts";
import type { LedgerReplay, Ledgers } from "../../contracts/ledger.ts";
import { AgentLedgerRequest, LedgerRequest } from "../../contracts/ledgerRequest.ts";
import type { RecordedSupplement } from "../../contracts/supplement.ts";
import { InvalidRequestError, singleLine } from "../../errors.ts";
import { isLedgerWrite, LedgerError } from "../../ledgers/decide.ts";
import { ledgerDigest, queryTruth } from "../../ledgers/digest.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import { replayLedgers } from "../replay.ts";
import type { SessionStore } from "../sessionStore.ts";

/** What answering a ledger request needs. */
export interface LedgerDeps {
  ledgers: LedgerStore;
  log: Logger;
  /** Where a replay finds the session's latest checkpoint (it folds from its ledgers); absent: from the start. */
  sessions?: Pick<SessionStore, "checkpoint" | "snapshot">;
  /** The runner's context arena, which plans supplements (absent: the environment's, CONCLAVE_CONTEXT_*). */
  arena?: ArenaPolicy;
}

/** A result naming the runtime's session id (both ledgers, a replay) as the tenant names it. */
function asViewed(result: unknown, view: string): unknown {
  const rename = (ledgers: Ledgers): Ledgers => ({ ...ledgers, session_id: view });
  if (typeof result !== "object" || result === null) return result;
  if ("rebuilt" in result) {
    const replay = result as LedgerReplay;
    return { ...replay, rebuilt: rename(replay.rebuilt), stored: replay.stored && rename(replay.stored) };
  }
  if ("truth" in result && "task" in result) return rename(result as Ledgers);
  return result;
}

/** Largest accepted ledger request, in bytes. */
export const MAX_LEDGER_REQUEST_BYTES = 65_536;

/**
 * A ledger operation on a session (`conclave.ledger.<session>`, or a
 * tenant's `conclave.tenant.<tenant>.ledger.<session>`; any runner answers):
 * reads fold the log (through the projection, caught up); writes are decided
 * and stored as events on the session's log (see LedgerStore). Bad input and
 * refused writes get an error reply naming the problem.
 *
 * Who made a change is what the subject says of the requester, never the
 * body: `user` (or `user:<user_id>`, the end user a client names) from the
 * runtime's own account, `tenant:<name>` through a tenant's import. A body
 * claiming `by` is refused (`invalid_request`, by the schema). Agents write
 * on their own subject: {@link serveAgentLedger}.
 */
export async function serveLedger(deps: LedgerDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    const asked = decodeMessage(msg, LedgerRequest, `ledger request for session ${view}`, MAX_LEDGER_REQUEST_BYTES);
    if (tenant && asked.user_id !== undefined)
      throw new HandlerError(
        "forbidden",
        `a tenant's ledger changes are recorded as its own (tenant:${tenant}): user_id is not for tenants`,
      );
    const by = tenant ? `tenant:${tenant}` : asked.user_id !== undefined ? `user:${asked.user_id}` : "user";
    await answerLedger(deps, msg, { sessionId, view }, asked, by);
  } catch (error) {
    refuse(deps, msg, error);
  }
}

/**
 * An agent's ledger operation (`conclave.agentledger.<session>`, an
 * AgentLedgerRequest), asked by the worker hosting it for its
 * `ctx.ledgers`: the same operations, a change recorded as
 * `agent:<agent_id>`. nats.conf lets only the worker role publish there; this
 * is the one path by which a change is recorded as an agent's.
 */
export async function serveAgentLedger(deps: LedgerDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("forbidden", "agents write the ledgers of the runtime's sessions only");
    const asked = decodeJson(
      msg.data,
      AgentLedgerRequest,
      `agent ledger request for session ${view}`,
      MAX_LEDGER_REQUEST_BYTES,
    );
    if (asked.request.user_id !== undefined)
      throw new HandlerError(
        "invalid_request",
        `an agent's ledger changes are recorded as its own (agent:${asked.agent_id}): user_id is not for agents`,
      );
    await answerLedger(deps, msg, { sessionId, view }, asked.request, `agent:${asked.agent_id}`);
  } catch (error) {
    refuse(deps, msg, error);
  }
}

/** Applies `asked` as `by` and answers it. */
async function answerLedger(
  deps: LedgerDeps,
  msg: ServiceMsg,
  { sessionId, view }: { sessionId: string; view: string },
  asked: LedgerRequest,
  by: string,
): Promise<void> {
  if (asked.session_id !== view)
    throw new HandlerError("invalid_request", `the request names session ${asked.session_id}, the subject ${view}`);
  // A tenant names its session as it knows it; the ledgers keep it under the runtime's id.
  const request = withDefaultInstructions({ ...asked, session_id: sessionId });
  const store = deps.ledgers;
  const result = await (async () => {
    if (isLedgerWrite(request)) return store.write(request, by);
    switch (request.op) {
      case "context.plan_supplement":
        return supplementPlan(deps, request.supplement, await pendingOf(deps, sessionId));
      case "context.commit_supplement": {
        // Planned here, with this runner's arena: the text as the zone takes it, cut to the commit's tokens,
        // after the supplements pending. A scope committed before is answered by the ledgers (nothing stored).
        const pending = await pendingOf(deps, sessionId);
        const { scope } = request.supplement;
        const repeated = scope !== undefined && pending.scopes.includes(scope);
        const planned = committedOf(
          repeated
            ? planSupplement(request.supplement.text, deps.arena ?? arenaPolicyFromEnv(), { scope })
            : supplementPlan(deps, request.supplement, pending),
        );
        if (planned === null)
          throw new HandlerError(
            "invalid_request",
            "the supplemental zone has no room for the text: nothing committed",
          );
        return store.write({ ...request, planned }, by);
      }
      case "ledgers.replay":
        return deps.sessions ? replayLedgers(store, deps.sessions, sessionId) : store.replay(sessionId);
      case "truth.query":
        return queryTruth(await store.state(sessionId), request);
      default: {
        const ledgers = await store.state(sessionId);
        if (request.op === "truth.digest") return ledgerDigest(ledgers);
        if (request.op === "truth.state") return ledgers.truth;
        if (request.op === "task.state") return ledgers.task;
        if (request.op === "workers.list") return ledgers.workers;
        return ledgers;
      }
    }
  })();
  if (isInboxReply(msg.reply, "runner"))
    respondJson(msg, { result: sessionId === view ? result : asViewed(result, view) });
}

/**
 * The session's supplements its next turn will show (committed, not consumed by its arena, as the
 * session's stored snapshot says), and the scopes committed so far.
 */
async function pendingOf(
  deps: LedgerDeps,
  sessionId: string,
): Promise<{ supplements: RecordedSupplement[]; scopes: string[] }> {
  const [ledgers, snapshot] = await Promise.all([
    deps.ledgers.state(sessionId),
    deps.sessions ? deps.sessions.snapshot(sessionId) : null,
  ]);
  const recorded = ledgers.supplements?.recorded ?? [];
  return {
    supplements: pendingSupplements(snapshot?.context_arena, recorded),
    scopes: ledgers.supplements?.scopes ?? [],
  };
}

/** A supplement planned with this runner's arena; more tokens than the zone's room is the requester's error. */
function supplementPlan(
  deps: LedgerDeps,
  { text, ...options }: { text: string; tokens?: number; scope?: string; usage_tokens?: number },
  pending: { supplements: RecordedSupplement[] },
) {
  try {
    return planSupplement(text, deps.arena ?? arenaPolicyFromEnv(), { ...options, pending: pending.supplements });
  } catch (error) {
    if (error instanceof InvalidRequestError) throw new HandlerError("invalid_request", error.message);
    throw error;
  }
}

/**
 * A compaction request without instructions, given CONCLAVE_COMPACTION_INSTRUCTIONS (when this runner sets
 * it): recorded in its event, so the turn that consumes it, and `pendingCompaction`, read what applied.
 */
function withDefaultInstructions(request: LedgerRequest): LedgerRequest {
  if (request.op !== "context.request_compaction" || request.compaction.instructions !== undefined) return request;
  const instructions = setting(process.env, "CONCLAVE_COMPACTION_INSTRUCTIONS");
  return instructions ? { ...request, compaction: { ...request.compaction, instructions } } : request;
}

/** The error reply to a request that failed, logged. */
function refuse(deps: LedgerDeps, msg: ServiceMsg, error: unknown): void {
  const failure = error instanceof LedgerError ? new HandlerError(error.code, error.message) : asHandlerError(error);
  deps.log.warn(`ledger request on ${msg.subject}: ${singleLine(failure.message)}`);
  if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
}

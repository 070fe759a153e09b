import type { ServiceMsg } from "@nats-io/services";
import { decodeJson, encodeJson } from "../../bus/codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { LedgerRequest } from "../../contracts/ledger.ts";
import { singleLine } from "../../errors.ts";
import { isLedgerWrite, LedgerError } from "../../ledgers/decide.ts";
import { ledgerDigest, queryTruth } from "../../ledgers/digest.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import type { Logger } from "../log.ts";
import { addressOf } from "./tenancy.ts";

/** What answering a ledger request needs. */
export interface LedgerDeps {
  ledgers: LedgerStore;
  log: Logger;
}

/** Largest accepted ledger request, in bytes. */
export const MAX_LEDGER_REQUEST_BYTES = 65_536;

/**
 * A ledger operation on a session (`conclave.ledger.<session>`, any runner
 * answers): reads fold the log (through the projection, caught up); writes are
 * decided and stored as events on the session's log (see LedgerStore).
 * Bad input and refused writes get an error reply naming the problem.
 */
export async function serveLedger(deps: LedgerDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("invalid_request", "tenants cannot use the ledgers yet");
    const request = decodeJson(msg.data, LedgerRequest, `ledger request for session ${view}`, MAX_LEDGER_REQUEST_BYTES);
    if (request.session_id !== sessionId)
      throw new HandlerError("invalid_request", `the request names session ${request.session_id}, the subject ${view}`);
    const store = deps.ledgers;
    const result = await (async () => {
      if (isLedgerWrite(request)) return store.write(request, request.by ?? "user");
      switch (request.op) {
        case "ledgers.replay":
          return store.replay(sessionId);
        case "truth.query":
          return queryTruth(await store.state(sessionId), request);
        default: {
          const ledgers = await store.state(sessionId);
          if (request.op === "truth.digest") return ledgerDigest(ledgers);
          if (request.op === "truth.state") return ledgers.truth;
          if (request.op === "task.state") return ledgers.task;
          return ledgers;
        }
      }
    })();
    if (isInboxReply(msg.reply)) msg.respond(encodeJson({ result }));
  } catch (error) {
    const failure = error instanceof LedgerError ? new HandlerError(error.code, error.message) : asHandlerError(error);
    deps.log.warn(`ledger request on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply)) respondWithError(msg, failure);
  }
}

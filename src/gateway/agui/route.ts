/**
 * `POST /ag-ui`: one AG-UI run, a turn of the session its thread names, its
 * events sent back as they happen over Server-Sent Events (or AG-UI's
 * protobuf framing, when the client's Accept asks for it): RUN_STARTED, a
 * STATE_SNAPSHOT, the turn's events as turned into AG-UI's (translate.ts),
 * then RUN_FINISHED, or RUN_ERROR with one line. A client that goes away
 * cancels the turn. A malformed request is answered with a one-line JSON
 * error before any event is sent.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type BaseEvent, EventType } from "@ag-ui/core";
import { AGUI_MEDIA_TYPE, EventEncoder } from "@ag-ui/encoder";
import { ConclaveError, messageOf, singleLine } from "../../errors.ts";
import { parseJsonBody, type Route, readBody, sendError } from "../http.ts";
import { callerOf, type GatewayClients, sessionOf } from "../principals.ts";
import { type AguiRun, parseRunInput } from "./input.ts";
import { TurnToAgui } from "./translate.ts";

/** Patience for one run's turn, in ms (as `conclave serve --timeout`'s default). */
export const AGUI_TURN_TIMEOUT_MS = 120_000;

/** What the route needs. */
export interface AguiRouteOptions {
  /** The client each principal talks through (principals.ts): a run's thread is its caller's session. */
  clients: GatewayClients;
  timeoutMs?: number;
  /** Failures no answer could carry (a client gone mid-stream). */
  onError?: (error: unknown) => void;
}

/** The `/ag-ui` route. */
export function aguiRoute(options: AguiRouteOptions): Route {
  return async (request, response) => {
    const method = request.method ?? "GET";
    if (method === "OPTIONS") {
      request.resume();
      return preflight(request, response);
    }
    if (method !== "POST") {
      request.resume();
      return sendError(response, 405, "method_not_allowed", `method ${method} not allowed: POST a RunAgentInput`);
    }
    const type = request.headers["content-type"] ?? "";
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      request.resume();
      return sendError(
        response,
        415,
        "invalid_request",
        `Content-Type must be application/json (got ${type === "" ? "none" : JSON.stringify(type)})`,
      );
    }
    const body = parseJsonBody(await readBody(request));
    await streamRun(options, parseRunInput(body), request, response);
  };
}

/** Runs the turn and streams its events; never throws once the stream has begun. */
async function streamRun(options: AguiRouteOptions, run: AguiRun, request: IncomingMessage, response: ServerResponse) {
  // Protobuf only when the client names it: a client accepting anything (`*/*`) reads SSE, AG-UI's JSON encoding.
  const accept = request.headers.accept ?? "";
  const encoder = new EventEncoder(accept.toLowerCase().includes(AGUI_MEDIA_TYPE) ? { accept } : {});
  response.writeHead(200, {
    "content-type": encoder.getContentType(),
    "cache-control": "no-cache, no-store",
    "x-accel-buffering": "no",
    "x-content-type-options": "nosniff",
    ...corsHeaders(request),
  });
  const send = (event: BaseEvent) => {
    if (!response.writableEnded && !response.destroyed) response.write(encoder.encodeBinary(event));
  };
  const gone = new AbortController();
  response.once("close", () => {
    if (!response.writableFinished) gone.abort(new Error("the AG-UI client went away"));
  });
  const ids = { threadId: run.input.threadId, runId: run.runId };
  send({ type: EventType.RUN_STARTED, ...ids, input: run.input } as BaseEvent);
  const translator = new TurnToAgui(run.runId);
  send(translator.snapshot());
  try {
    const principal = callerOf(request);
    const client = await options.clients.for(principal);
    const turn = client.submit(sessionOf(principal, run.sessionId), run.text, {
      signal: gone.signal,
      timeoutMs: options.timeoutMs ?? AGUI_TURN_TIMEOUT_MS,
    });
    for await (const event of turn) for (const translated of translator.translate(event)) send(translated);
    const result = await turn.result;
    for (const event of translator.finish(result.response)) send(event);
    const conclave = { session_id: run.sessionId, turn_id: result.turnId, outcome: result.outcome };
    if (result.outcome.status === "Cancelled")
      send({ type: EventType.RUN_FINISHED, ...ids, result: conclave, outcome: { type: "cancelled" } } as BaseEvent);
    else send({ type: EventType.RUN_FINISHED, ...ids, result: conclave } as BaseEvent);
  } catch (error) {
    if (gone.signal.aborted) options.onError?.(error);
    const code = error instanceof ConclaveError ? String(error.code) : "internal";
    send({ type: EventType.RUN_ERROR, message: singleLine(messageOf(error), 300), code } as BaseEvent);
  } finally {
    response.end();
  }
}

/**
 * A browser's preflight, for a page served elsewhere on this machine (or
 * anywhere, with the token; but a preflight carries no token, so a page
 * reaches a gateway with a token only through its own server or a proxy).
 * Access was checked before any route: its Origin may call.
 */
function preflight(request: IncomingMessage, response: ServerResponse) {
  response.writeHead(204, {
    ...corsHeaders(request),
    "access-control-allow-methods": "POST, OPTIONS",
    "access-control-allow-headers": "content-type, accept, authorization",
    "access-control-max-age": "600",
  });
  response.end();
}

/** The CORS answer for a request from a page (it has an Origin; access was already checked). */
function corsHeaders(request: IncomingMessage): Record<string, string> {
  const origin = request.headers.origin;
  return origin === undefined ? {} : { "access-control-allow-origin": origin, vary: "Origin" };
}

/**
 * A2A's JSON-RPC binding on `/a2a`, without Express: the body is checked here
 * (method, content type, size, JSON, one request object) and every malformed
 * request answered with a JSON-RPC error; the SDK's JsonRpcTransportHandler
 * answers the rest (unknown methods, bad params included), a streaming
 * method as Server-Sent Events (sse.ts), one JSON-RPC response per event.
 * Both versions' method names are served: v1.0's (`SendMessage`,
 * `SendStreamingMessage`, `GetTask`…) and v0.3's (`message/send`,
 * `message/stream`, `tasks/get`…), the latter with v0.3's params and
 * results, through the SDK's v0.3 compat handler.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AgentCard } from "@a2a-js/sdk";
import { A2A_LEGACY_PROTOCOL_VERSION, isLegacyJsonRpcMethod } from "@a2a-js/sdk/compat/v0_3";
import type { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import type { JsonRpcTransportHandler } from "@a2a-js/sdk/server";
import { JSON_RPC, jsonRpcBody, sendJson, sendJsonRpcError } from "../http.ts";
import { callContext } from "./callContext.ts";
import { writeSse } from "./sse.ts";

type RpcId = string | number | null;

/** The request's id when it is one JSON-RPC may carry, else null. */
function idOf(body: Record<string, unknown>): RpcId {
  const id = body.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** The `/a2a` route. */
export function jsonRpcRoute(options: {
  transport: JsonRpcTransportHandler;
  card: AgentCard;
  mapError: (error: unknown) => { code: number; message: string };
  /** Serves the v0.3 method names, and maps errors to v0.3's. */
  legacy: {
    transport: LegacyJsonRpcTransportHandler;
    mapError: (error: unknown) => { code: number; message: string };
  };
  onError?: (error: unknown) => void;
}) {
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (request.method !== "POST") {
      request.resume();
      return sendJsonRpcError(response, 405, JSON_RPC.serverError, `method ${request.method} not allowed: POST`);
    }
    const read = await jsonRpcBody(request, response, /^application\/(a2a\+)?json\s*(;|$)/i);
    if (!read) return;
    const { body } = read;
    if (typeof body !== "object" || body === null || Array.isArray(body))
      return sendJsonRpcError(
        response,
        400,
        JSON_RPC.invalidRequest,
        "the body must be one JSON-RPC request object (batches are not served)",
      );
    const request_ = body as Record<string, unknown>;
    const id = idOf(request_);
    const legacy = isLegacyJsonRpcMethod(request_.method);
    const mapError = legacy ? options.legacy.mapError : options.mapError;
    const fail = (error: unknown) => ({ jsonrpc: "2.0", id, error: mapError(error) });
    let answer:
      | Awaited<ReturnType<JsonRpcTransportHandler["handle"]>>
      | Awaited<ReturnType<LegacyJsonRpcTransportHandler["handle"]>>;
    try {
      answer = legacy
        ? await options.legacy.transport.handle(
            request_,
            callContext(request, options.card, "JSONRPC", A2A_LEGACY_PROTOCOL_VERSION),
          )
        : await options.transport.handle(request_, callContext(request, options.card, "JSONRPC"));
    } catch (error) {
      return sendJson(response, 200, fail(error));
    }
    if (!(Symbol.asyncIterator in answer)) return sendJson(response, 200, answer);
    await writeSse(response, answer, {
      data: (event) => event,
      failure: (error) => ({ status: 200, body: fail(error) }),
      answer: (status, body) => sendJson(response, status, body),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  };
}

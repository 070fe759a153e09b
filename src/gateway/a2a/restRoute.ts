/**
 * A2A's HTTP+JSON binding under `/a2a/rest`, without Express (the SDK's own
 * REST server needs it): `POST /message:send`, `POST /message:stream` (SSE),
 * `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`
 * (SSE). Bodies and answers are A2A's JSON; errors are its REST error body
 * `{"error": {"code", "status", "message", "details"}}` with the HTTP status
 * the SDK gives each error. Malformed requests are answered here, never thrown.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type AgentCard,
  type Message,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  Task,
} from "@a2a-js/sdk";
import { RequestMalformedError, restStatusFor, toRestErrorBody } from "@a2a-js/sdk/errors";
import type { A2ARequestHandler } from "@a2a-js/sdk/server";
import { messageOf } from "../../errors.ts";
import { GatewayRequestError, parseJsonBody, readBody, sendJson } from "../http.ts";
import { callContext } from "./callContext.ts";
import { A2A_REST_PATH } from "./card.ts";
import { writeSse } from "./sse.ts";

/** A REST error answer. */
function sendRestError(response: ServerResponse, error: unknown): void {
  const status = restStatusFor(error);
  sendJson(response, status, toRestErrorBody(error, status));
}

/** The request's body as a JSON object; a RequestMalformedError (400) otherwise. */
async function jsonBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const type = request.headers["content-type"] ?? "";
  if (!/^application\/(a2a\+)?json\s*(;|$)/i.test(type)) {
    request.resume();
    throw new RequestMalformedError(
      `Content-Type must be application/json or application/a2a+json (got ${type === "" ? "none" : JSON.stringify(type)})`,
    );
  }
  const text = await readBody(request);
  let body: unknown;
  try {
    body = parseJsonBody(text);
  } catch (error) {
    throw new RequestMalformedError(messageOf(error));
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new RequestMalformedError("the body must be a JSON object (a SendMessageRequest)");
  return body as Record<string, unknown>;
}

/** A task id from its path segment; a RequestMalformedError (400) for a malformed `%` escape. */
function taskIdOf(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new RequestMalformedError(`the task id ${JSON.stringify(segment.slice(0, 80))} has a malformed % escape`);
  }
}

/** A SendMessageRequest from its JSON, checked as the SDK's REST server checks it. */
function sendMessageRequest(body: Record<string, unknown>): SendMessageRequest {
  let params: SendMessageRequest;
  try {
    params = SendMessageRequest.fromJSON(body);
  } catch (error) {
    throw new RequestMalformedError(`not a SendMessageRequest: ${messageOf(error)}`);
  }
  if (!params.message) throw new RequestMalformedError("message is required");
  if (!params.message.messageId) throw new RequestMalformedError("message.messageId is required");
  return params;
}

/** The `/a2a/rest/…` route. */
export function restRoute(options: {
  handler: A2ARequestHandler;
  card: AgentCard;
  onError?: (error: unknown) => void;
}) {
  const { handler, card } = options;
  const stream = (response: ServerResponse, events: AsyncGenerator<StreamResponse, void, undefined>) =>
    writeSse(response, events, {
      data: (event) => StreamResponse.toJSON(event),
      failure: (error) => {
        const status = restStatusFor(error);
        return { status, body: toRestErrorBody(error, status) };
      },
      answer: (status, body) => sendJson(response, status, body),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(request.url ?? "/", "http://gateway").pathname.slice(A2A_REST_PATH.length);
    const method = request.method ?? "GET";
    const task = /^\/tasks\/([^/:]+)(?::(cancel|subscribe))?$/.exec(path);
    try {
      const taskId = task ? taskIdOf(task[1]!) : "";
      if (method === "POST" && path === "/message:send") {
        const params = sendMessageRequest(await jsonBody(request));
        const context = callContext(request, card, "HTTP+JSON");
        const result = await handler.sendMessage(params, context);
        const payload =
          "messageId" in result
            ? { $case: "message" as const, value: result as Message }
            : { $case: "task" as const, value: result };
        return sendJson(response, 200, SendMessageResponse.toJSON({ payload }));
      }
      if (method === "POST" && path === "/message:stream") {
        const params = sendMessageRequest(await jsonBody(request));
        return await stream(response, handler.sendMessageStream(params, callContext(request, card, "HTTP+JSON")));
      }
      request.resume();
      if (task && method === "GET" && task[2] === undefined) {
        const found = await handler.getTask({ id: taskId, tenant: "" }, callContext(request, card, "HTTP+JSON"));
        return sendJson(response, 200, Task.toJSON(found));
      }
      if (task && method === "POST" && task[2] === "cancel") {
        const context = callContext(request, card, "HTTP+JSON");
        const cancelled = await handler.cancelTask({ id: taskId, tenant: "", metadata: {} }, context);
        return sendJson(response, 200, Task.toJSON(cancelled));
      }
      if (task && (method === "GET" || method === "POST") && task[2] === "subscribe")
        return await stream(
          response,
          handler.resubscribe({ id: taskId, tenant: "" }, callContext(request, card, "HTTP+JSON")),
        );
      const message = `no ${method} ${A2A_REST_PATH}${path}: POST /message:send or /message:stream, GET /tasks/{id}, POST /tasks/{id}:cancel, GET /tasks/{id}:subscribe`;
      return sendJson(response, 404, { error: { code: 404, status: "NOT_FOUND", message, details: [] } });
    } catch (error) {
      if (error instanceof GatewayRequestError) throw error; // a body too large: http.ts answers 413
      if (response.headersSent) {
        options.onError?.(error);
        response.end();
      } else sendRestError(response, error);
    }
  };
}

/**
 * `conclave serve`'s A2A side, put together: the agent card, the SDK's
 * request handler (tasks kept in memory, bounded: taskStore.ts) over
 * Conclave's tools, and its
 * routes, which the HTTP gateway serves beside `/mcp` under the same access
 * rules. This module imports `@a2a-js/sdk`, an optional package: load it
 * through loadA2aGateway (open.ts).
 */
import type { SendMessageRequest, StreamResponse } from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import { DefaultRequestHandler, JsonRpcTransportHandler, type ServerCallContext } from "@a2a-js/sdk/server";
import { MAX_CONVERSE_TEXT } from "../converse.ts";
import type { Route } from "../http.ts";
import type { GatewayClients } from "../principals.ts";
import type { GatewayTool } from "../tools.ts";
import { A2A_JSONRPC_PATH, A2A_REST_PATH, AGENT_CARD_ROUTE, agentCard, agentCardRoute, listenAt } from "./card.ts";
import { ConclaveAgentExecutor } from "./executor.ts";
import { jsonRpcRoute } from "./jsonRpcRoute.ts";
import { textOf } from "./parts.ts";
import { restRoute } from "./restRoute.ts";
import { BoundedTaskStore, type TaskStoreLimits } from "./taskStore.ts";

/** The A2A routes of a gateway, to serve once it listens. */
export interface A2aGateway {
  /** `/.well-known/agent-card.json`, `/a2a` (JSON-RPC) and `/a2a/rest/*` (HTTP+JSON). */
  routes: Record<string, Route>;
  /** Points the card at where the gateway listens (its base URL). */
  listening(baseUrl: string): void;
  /**
   * Drops every task whose calls worked in the session (its runtime id, as the
   * erase broadcast names it: `<namespace>-<id>` for a named client's, `<tenant>-<id>`
   * for a tenant's): get and list find none from then on. How many it dropped.
   */
  forgetSession(sessionId: string): number;
  /** Cancels the calls running. */
  close(): void;
}

/**
 * The SDK's handler, refusing a message whose text is longer than a
 * conversation takes before any task exists for it (RequestMalformedError: 400).
 */
class BoundedRequestHandler extends DefaultRequestHandler {
  override sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    refuseLongText(params);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    refuseLongText(params);
    yield* super.sendMessageStream(params, context);
  }
}

function refuseLongText(params: SendMessageRequest): void {
  if (params.message && textOf(params.message).length > MAX_CONVERSE_TEXT)
    throw new RequestMalformedError(
      `the message's text is longer than ${MAX_CONVERSE_TEXT} characters: send less (a recipe's inputs go in a data part)`,
    );
}

/** A2A over Conclave's tools. */
export function createA2aGateway(options: {
  /** The client each principal talks through (principals.ts). */
  clients: GatewayClients;
  tools: readonly GatewayTool[];
  version: string;
  /** Whether requests need the gateway's token (the card says so). */
  token: boolean;
  timeoutMs: number;
  /** How many tasks are kept, how long and how big (docs/gateway.md#limits). */
  tasks: Omit<TaskStoreLimits, "onForget" | "now">;
  onError?: (error: unknown) => void;
}): A2aGateway {
  const card = agentCard(options);
  const executor = new ConclaveAgentExecutor({
    clients: options.clients,
    tools: options.tools,
    timeoutMs: options.timeoutMs,
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const store = new BoundedTaskStore({ ...options.tasks, onForget: (taskId) => executor.forget(taskId) });
  const handler = new BoundedRequestHandler(card, store, executor);
  const transport = new JsonRpcTransportHandler(handler);
  return {
    routes: {
      [AGENT_CARD_ROUTE]: agentCardRoute(card),
      [A2A_JSONRPC_PATH]: jsonRpcRoute({
        transport,
        card,
        mapError: (error) => JsonRpcTransportHandler.mapToJSONRPCError(error),
        legacy: {
          transport: new LegacyJsonRpcTransportHandler(handler),
          mapError: (error) => LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error),
        },
        ...(options.onError ? { onError: options.onError } : {}),
      }),
      [`${A2A_REST_PATH}/*`]: restRoute({
        handler,
        card,
        ...(options.onError ? { onError: options.onError } : {}),
      }),
    },
    listening: (baseUrl) => listenAt(card, baseUrl),
    forgetSession: (sessionId) => store.drop((task) => executor.workedIn(task.id, sessionId)),
    close: () => executor.abortAll(),
  };
}

/**
 * The gateway's A2A agent card (`/.well-known/agent-card.json`): one skill
 * per gateway tool (`converse` and each recipe), the JSON-RPC and HTTP+JSON
 * interfaces at the listening address, and the bearer scheme when the gateway has a token.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AgentCard, type AgentSkill } from "@a2a-js/sdk";
import { sendError, sendJson } from "../http.ts";
import type { GatewayTool } from "../tools.ts";

/** The path of the JSON-RPC binding. */
export const A2A_JSONRPC_PATH = "/a2a";
/** The base path of the HTTP+JSON binding. */
export const A2A_REST_PATH = "/a2a/rest";
/** Where clients look for the card (A2A's well-known path). */
export const AGENT_CARD_ROUTE = "/.well-known/agent-card.json";

/** A tool as a skill: its name and description; a recipe's inputs go in a data part. */
function skillOf(tool: GatewayTool): AgentSkill {
  const recipe = tool.name !== "converse";
  return {
    id: tool.name,
    name: tool.name,
    description: recipe
      ? `${tool.description} Send metadata {"skill": "${tool.name}"} and the inputs as a data part.`
      : `${tool.description} A task is one turn; the task's contextId is the conversation.`,
    tags: [recipe ? "recipe" : "conversation"],
    examples: [],
    inputModes: recipe ? ["application/json"] : ["text/plain"],
    outputModes: recipe ? ["application/json", "text/plain"] : ["text/plain", "application/json"],
    securityRequirements: [],
  };
}

/**
 * The card, its interfaces still empty: they are filled in once the gateway
 * listens (`listenAt`), the request handler holding this same object.
 */
export function agentCard(options: { tools: readonly GatewayTool[]; version: string; token: boolean }): AgentCard {
  return {
    name: "Conclave",
    description:
      "Conclave, a multi-agent runtime: converse with its council of agents, or run one of its recipes (workflows).",
    supportedInterfaces: [],
    provider: undefined,
    version: options.version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: options.token
      ? {
          bearer: {
            scheme: {
              $case: "httpAuthSecurityScheme",
              value: { description: "the gateway's token", scheme: "Bearer", bearerFormat: "" },
            },
          },
        }
      : {},
    securityRequirements: options.token ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain", "application/json"],
    skills: options.tools.map(skillOf),
    signatures: [],
  };
}

/** Points the card at the gateway's base URL, e.g. `http://127.0.0.1:7430`. */
export function listenAt(card: AgentCard, baseUrl: string): void {
  card.supportedInterfaces.splice(
    0,
    card.supportedInterfaces.length,
    { url: `${baseUrl}${A2A_JSONRPC_PATH}`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" },
    { url: `${baseUrl}${A2A_REST_PATH}`, protocolBinding: "HTTP+JSON", tenant: "", protocolVersion: "1.0" },
  );
}

/** Whether a base URL names every address (`0.0.0.0`, `[::]`): no client can call it. */
const isWildcard = (baseUrl: string) => /^http:\/\/(0\.0\.0\.0|\[::\])(:\d+)?$/.test(baseUrl);

/** The address this request's connection reached (a wildcard listener's actual one), as a base URL. */
function reachedAt(request: IncomingMessage): string {
  const address = (request.socket.localAddress ?? "127.0.0.1").replace(/^::ffff:/, "");
  return `http://${address.includes(":") ? `[${address}]` : address}:${request.socket.localPort}`;
}

/**
 * GET the card, as A2A's JSON. A gateway listening on every address
 * (`--host 0.0.0.0`) advertises the address each caller's connection reached,
 * never the wildcard.
 */
export function agentCardRoute(card: AgentCard) {
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    request.resume();
    if (request.method !== "GET" && request.method !== "HEAD")
      return sendError(response, 405, "method_not_allowed", `method ${request.method} not allowed: GET the card`);
    const base = card.supportedInterfaces[0]?.url.slice(0, -A2A_JSONRPC_PATH.length) ?? "";
    if (!isWildcard(base)) return sendJson(response, 200, AgentCard.toJSON(card));
    const reached = structuredClone(card);
    listenAt(reached, reachedAt(request));
    sendJson(response, 200, AgentCard.toJSON(reached));
  };
}

/**
 * The SDK's call context of one HTTP request, for either binding: its
 * headers, the A2A version it asks for (`A2A-Version`, checked against the
 * card's interfaces), no user (access is the gateway's: access.ts).
 */
import type { IncomingMessage } from "node:http";
import { A2A_VERSION_HEADER, type AgentCard } from "@a2a-js/sdk";
import {
  defaultServerCallContextBuilder,
  type ServerCallContext,
  UnauthenticatedUser,
  validateVersion,
} from "@a2a-js/sdk/server";

/** The request's context; throws the SDK's VersionNotSupportedError for a version the card does not list. */
export function callContext(
  request: IncomingMessage,
  card: AgentCard,
  binding: "JSONRPC" | "HTTP+JSON",
): ServerCallContext {
  const version = request.headers[A2A_VERSION_HEADER.toLowerCase()];
  const context = defaultServerCallContextBuilder({
    extensions: undefined,
    user: new UnauthenticatedUser(),
    headers: request.headers,
    requestedVersion: (Array.isArray(version) ? version[0] : version) || undefined,
  });
  validateVersion(context.requestedVersion, card, binding);
  return context;
}

/**
 * The SDK's call context of one HTTP request, for either binding: its
 * headers, the A2A version it asks for (`A2A-Version`, checked against the
 * card's interfaces), and its principal as the SDK's user (access is the
 * gateway's: principals.ts), so the task store keeps each principal's tasks
 * apart: another's task is not found.
 */
import type { IncomingMessage } from "node:http";
import { A2A_VERSION_HEADER, type AgentCard } from "@a2a-js/sdk";
import {
  defaultServerCallContextBuilder,
  type ServerCallContext,
  type User,
  validateVersion,
} from "@a2a-js/sdk/server";
import { callerOf, type Principal, SOLE_PRINCIPAL } from "../principals.ts";

/** A principal as the SDK's user: its name scopes the tasks it sees. */
class PrincipalUser implements User {
  constructor(readonly principal: Principal) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.principal.name;
  }
}

/** The principal of a call's context (the sole principal when it carries none, as in a test's own handler). */
export function principalOfContext(context: ServerCallContext | undefined): Principal {
  const user = context?.user;
  return user instanceof PrincipalUser ? user.principal : SOLE_PRINCIPAL;
}

/**
 * The request's context; throws the SDK's VersionNotSupportedError for a version the card does not list.
 * `legacyVersion`: the request is a v0.3 JSON-RPC method (`message/send`…), whose name says its
 * version: it is served as that version, whatever `A2A-Version` says.
 */
export function callContext(
  request: IncomingMessage,
  card: AgentCard,
  binding: "JSONRPC" | "HTTP+JSON",
  legacyVersion?: string,
): ServerCallContext {
  const version = request.headers[A2A_VERSION_HEADER.toLowerCase()];
  const context = defaultServerCallContextBuilder({
    extensions: undefined,
    user: new PrincipalUser(callerOf(request)),
    headers: request.headers,
    requestedVersion: legacyVersion ?? ((Array.isArray(version) ? version[0] : version) || undefined),
  });
  if (legacyVersion === undefined) validateVersion(context.requestedVersion, card, binding);
  return context;
}

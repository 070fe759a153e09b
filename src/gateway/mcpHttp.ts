/**
 * MCP over Streamable HTTP on `/mcp`: one MCP session per client (its
 * `Mcp-Session-Id`), each an MCP server of its own with its transport. The
 * sessions are the only state the gateway keeps, in memory: what a session
 * talks about lives in Conclave (NATS), so a client whose session expired or
 * whose gateway restarted initializes again and goes on. Sessions are kept
 * per gateway (rather than the SDK's stateless mode) because a cancellation
 * arrives as a request of its own and must reach the call it cancels.
 *
 * Every malformed request is answered here with a JSON-RPC error, before it
 * reaches the SDK: a body that is not JSON, the wrong content type, a
 * request of an unknown session, a first request that is not `initialize`.
 *
 * The sessions are bounded (docs/gateway.md#limits): per caller and in all,
 * a new session past either limit closes the least recently used idle one
 * rather than being refused, and a session that never made a call lasts a
 * minute, not half an hour.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { JSON_RPC, jsonRpcBody, sendJsonRpcError } from "./http.ts";
import { callerOf, type Principal } from "./principals.ts";

/** How the sessions are kept. */
export interface McpHttpOptions {
  /** A new MCP server, for a new session of `principal`. */
  createServer: (principal: Principal) => Server;
  /** A session with no request for this long is closed, in ms. Default 30 minutes. */
  idleMs?: number;
  /** A session that never made a call (only its initialize) is closed after this long, in ms. Default 60 s. */
  unusedIdleMs?: number;
  /** Most sessions open at once; a new one past it closes the least recently used idle one. Default 1 000. */
  maxSessions?: number;
  /** Most sessions of one principal (principals.ts); past it, that caller's least recently used idle one goes. Default maxSessions. */
  sessionsPerCaller?: number;
  onError?: (error: unknown) => void;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
  /** Requests being answered (an open SSE stream included): a busy session is never idle, nor evicted. */
  open: number;
  /** The principal that opened it, by name: only it may use the session. */
  caller: string;
  /** It made a request beyond its handshake (initialize, notifications/initialized). */
  used: boolean;
}

/** Whether a JSON-RPC body asks for something (a request with an id), not only notifies. */
const isCall = (body: unknown) =>
  typeof body === "object" && body !== null && (Array.isArray(body) ? body.some(isCall) : "id" in body);

/** The MCP sessions of one gateway, and the `/mcp` route. */
export class McpHttpSessions {
  /** Least recently used first: a request moves its session to the end. */
  private readonly sessions = new Map<string, Session>();
  private readonly idleMs: number;
  private readonly unusedIdleMs: number;
  private readonly maxSessions: number;
  private readonly perCaller: number;
  private readonly sweeper: NodeJS.Timeout;
  /** Sessions being initialized, by caller. */
  private readonly starting = new Map<string, number>();

  constructor(private readonly options: McpHttpOptions) {
    this.idleMs = options.idleMs ?? 30 * 60_000;
    this.unusedIdleMs = Math.min(options.unusedIdleMs ?? 60_000, this.idleMs);
    this.maxSessions = options.maxSessions ?? 1_000;
    this.perCaller = Math.min(options.sessionsPerCaller ?? this.maxSessions, this.maxSessions);
    const sweepEvery = Math.max(1_000, Math.min(this.unusedIdleMs, 60_000) / 2);
    this.sweeper = setInterval(() => this.closeIdle(), sweepEvery);
    this.sweeper.unref();
  }

  /** How many sessions are open. */
  get size(): number {
    return this.sessions.size;
  }

  /** The `/mcp` route: POST (messages), GET (the server's stream), DELETE (end the session). */
  readonly route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const method = request.method ?? "GET";
    if (!["POST", "GET", "DELETE"].includes(method)) {
      request.resume();
      return sendJsonRpcError(response, 405, JSON_RPC.serverError, `method ${method} not allowed: POST, GET or DELETE`);
    }
    const id = request.headers["mcp-session-id"];
    const sessionId = Array.isArray(id) ? id[0] : id;
    const found = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    // Another principal's session is not found: its id proves nothing about who may use it.
    const session = found?.caller === callerOf(request).name ? found : undefined;
    if (sessionId !== undefined && !session) {
      request.resume();
      return sendJsonRpcError(
        response,
        404,
        JSON_RPC.invalidRequest,
        "unknown or expired MCP session: initialize a new one (without Mcp-Session-Id)",
      );
    }
    if (method !== "POST") {
      request.resume();
      if (!session)
        return sendJsonRpcError(
          response,
          400,
          JSON_RPC.invalidRequest,
          `${method} /mcp needs an Mcp-Session-Id header`,
        );
      return this.handle(session, request, response);
    }
    const read = await jsonRpcBody(request, response);
    if (!read) return;
    const { body } = read;
    if (session) return this.handle(session, request, response, body);
    if (!isInitializeRequest(body))
      return sendJsonRpcError(
        response,
        400,
        JSON_RPC.invalidRequest,
        "no MCP session: send initialize first, then give its Mcp-Session-Id header",
      );
    const principal = callerOf(request);
    const caller = principal.name;
    if (!this.makeRoom(caller))
      return sendJsonRpcError(
        response,
        503,
        JSON_RPC.serverError,
        "too many MCP sessions busy answering requests: try again later",
      );
    return this.start(request, response, body, principal);
  };

  /**
   * Room for one more session of `caller`: past its own limit its least
   * recently used idle session is closed, past the gateway's the least
   * recently used idle one of anyone. False when only busy sessions are left.
   */
  private makeRoom(caller: string): boolean {
    const starting = (of?: string) =>
      of === undefined ? [...this.starting.values()].reduce((a, b) => a + b, 0) : (this.starting.get(of) ?? 0);
    let mine = starting(caller);
    for (const session of this.sessions.values()) if (session.caller === caller) mine += 1;
    if (mine >= this.perCaller && !this.evictLeastRecent(caller)) return false;
    if (this.sessions.size + starting() >= this.maxSessions && !this.evictLeastRecent()) return false;
    return true;
  }

  /** Closes the least recently used idle session (of `caller` when given); false when there is none. */
  private evictLeastRecent(caller?: string): boolean {
    for (const [id, session] of this.sessions)
      if (session.open === 0 && (caller === undefined || session.caller === caller)) {
        this.drop(id, session);
        return true;
      }
    return false;
  }

  private drop(id: string, session: Session): void {
    this.sessions.delete(id);
    session.server.close().catch((error: unknown) => this.options.onError?.(error));
  }

  /** A new session from its `initialize` request. */
  private async start(request: IncomingMessage, response: ServerResponse, body: unknown, principal: Principal) {
    const caller = principal.name;
    const server = this.options.createServer(principal);
    let entry: Session | null = null;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        entry = { transport, server, lastSeen: Date.now(), open: 0, caller, used: false };
        this.sessions.set(id, entry);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.sessions.delete(transport.sessionId);
    };
    transport.onerror = (error) => this.options.onError?.(error);
    this.starting.set(caller, (this.starting.get(caller) ?? 0) + 1);
    try {
      await server.connect(transport);
      await transport.handleRequest(request, response, body);
    } finally {
      const left = (this.starting.get(caller) ?? 1) - 1;
      if (left === 0) this.starting.delete(caller);
      else this.starting.set(caller, left);
    }
    // An initialize the SDK refused made no session: nothing of it is kept.
    if (!entry) await server.close().catch(() => {});
  }

  private async handle(session: Session, request: IncomingMessage, response: ServerResponse, body?: unknown) {
    const id = session.transport.sessionId;
    if (id !== undefined && this.sessions.delete(id)) this.sessions.set(id, session); // now the most recently used
    if (request.method !== "POST" || isCall(body)) session.used = true;
    session.lastSeen = Date.now();
    session.open += 1;
    response.once("close", () => {
      session.open -= 1;
      session.lastSeen = Date.now();
    });
    await session.transport.handleRequest(request, response, body);
  }

  /** Closes the sessions idle for longer than `idleMs` (`unusedIdleMs` for one that never made a call). */
  closeIdle(now = Date.now()): void {
    for (const [id, session] of this.sessions)
      if (session.open === 0 && now - session.lastSeen > (session.used ? this.idleMs : this.unusedIdleMs))
        this.drop(id, session);
  }

  /** Closes every session (their calls' signals abort: their turns are cancelled). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((session) => session.server.close()));
  }
}

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
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { JSON_RPC, jsonRpcBody, sendJsonRpcError } from "./http.ts";

/** How the sessions are kept. */
export interface McpHttpOptions {
  /** A new MCP server, for a new session. */
  createServer: () => Server;
  /** A session with no request for this long is closed, in ms. Default 30 minutes. */
  idleMs?: number;
  /** Most sessions open at once; an `initialize` beyond is refused (503). Default 1 000. */
  maxSessions?: number;
  onError?: (error: unknown) => void;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
  /** Requests being answered (an open SSE stream included): a busy session is never idle. */
  open: number;
}

/** The MCP sessions of one gateway, and the `/mcp` route. */
export class McpHttpSessions {
  private readonly sessions = new Map<string, Session>();
  private readonly idleMs: number;
  private readonly maxSessions: number;
  private readonly sweeper: NodeJS.Timeout;
  private starting = 0;

  constructor(private readonly options: McpHttpOptions) {
    this.idleMs = options.idleMs ?? 30 * 60_000;
    this.maxSessions = options.maxSessions ?? 1_000;
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(this.idleMs, 60_000));
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
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
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
    if (this.sessions.size + this.starting >= this.maxSessions)
      return sendJsonRpcError(response, 503, JSON_RPC.serverError, "too many MCP sessions open: try again later");
    return this.start(request, response, body);
  };

  /** A new session from its `initialize` request. */
  private async start(request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    const server = this.options.createServer();
    let entry: Session | null = null;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        entry = { transport, server, lastSeen: Date.now(), open: 0 };
        this.sessions.set(id, entry);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.sessions.delete(transport.sessionId);
    };
    transport.onerror = (error) => this.options.onError?.(error);
    this.starting += 1;
    try {
      await server.connect(transport);
      await transport.handleRequest(request, response, body);
    } finally {
      this.starting -= 1;
    }
    // An initialize the SDK refused made no session: nothing of it is kept.
    if (!entry) await server.close().catch(() => {});
  }

  private async handle(session: Session, request: IncomingMessage, response: ServerResponse, body?: unknown) {
    session.lastSeen = Date.now();
    session.open += 1;
    response.once("close", () => {
      session.open -= 1;
      session.lastSeen = Date.now();
    });
    await session.transport.handleRequest(request, response, body);
  }

  /** Closes the sessions idle for longer than `idleMs`. */
  closeIdle(now = Date.now()): void {
    for (const [id, session] of this.sessions)
      if (session.open === 0 && now - session.lastSeen > this.idleMs) {
        this.sessions.delete(id);
        session.server.close().catch((error: unknown) => this.options.onError?.(error));
      }
  }

  /** Closes every session (their calls' signals abort: their turns are cancelled). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((session) => session.server.close()));
  }
}

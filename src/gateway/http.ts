/**
 * The gateway's HTTP plumbing, free of MCP: JSON answers, JSON-RPC errors,
 * bodies read with a ceiling, and the listening server, which checks access
 * (access.ts) before any route and turns every failure into an answer, never
 * a crash.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { ConclaveError, messageOf, singleLine } from "../errors.ts";
import { PortInUseError } from "../viewer/localHttp.ts";
import { fromThisMachine } from "./access.ts";
import { jsonDepth, MAX_JSON_DEPTH } from "./limits.ts";
import { admitCaller, type Principals, SOLE_PRINCIPAL } from "./principals.ts";

/** Largest request body read, in bytes (the MCP SDK's own ceiling). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** A request the gateway refuses: its HTTP status and one line saying why. */
export class GatewayRequestError extends ConclaveError<"invalid_request" | "payload_too_large"> {
  readonly status: number;
  constructor(status: number, message: string, code: "invalid_request" | "payload_too_large" = "invalid_request") {
    super(code, message);
    this.status = status;
  }
}

/** A JSON answer. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  if (response.headersSent) {
    response.end();
    return;
  }
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...headers,
  });
  response.end(`${JSON.stringify(body)}\n`);
}

/** A plain HTTP error, for routes that are not JSON-RPC: `{"error": {"code", "message"}}`. */
export function sendError(response: ServerResponse, status: number, code: string, message: string) {
  sendJson(response, status, { error: { code, message: singleLine(message, 300) } });
}

/** JSON-RPC error codes the gateway answers with itself (the rest come from the MCP SDK). */
export const JSON_RPC = { parseError: -32700, invalidRequest: -32600, serverError: -32000 } as const;

/** A JSON-RPC error answer (id null: the request's id, if any, could not be trusted). */
export function sendJsonRpcError(response: ServerResponse, status: number, code: number, message: string) {
  sendJson(response, status, { jsonrpc: "2.0", error: { code, message: singleLine(message, 300) }, id: null });
}

/** Most bytes of a body too large read (and dropped) so that its sender can read the 413; past it, the connection is cut. */
const MAX_DRAINED_BYTES = 64 * 1024 * 1024;

/**
 * A JSON-RPC request's body (MCP, A2A): its content type checked against `accepted`, read and
 * parsed. When it is not acceptable the JSON-RPC error is already answered and `undefined` comes
 * back.
 */
export async function jsonRpcBody(
  request: IncomingMessage,
  response: ServerResponse,
  accepted = /^application\/json\s*(;|$)/i,
): Promise<{ body: unknown } | undefined> {
  const type = request.headers["content-type"] ?? "";
  if (!accepted.test(type)) {
    request.resume();
    sendJsonRpcError(
      response,
      415,
      JSON_RPC.invalidRequest,
      `Content-Type must be application/json (got ${type === "" ? "none" : JSON.stringify(type)})`,
    );
    return undefined;
  }
  const text = await readBody(request);
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    sendJsonRpcError(response, 400, JSON_RPC.invalidRequest, tooDeep().message);
    return undefined;
  }
  try {
    return { body: JSON.parse(text) };
  } catch (error) {
    sendJsonRpcError(response, 400, JSON_RPC.parseError, `the body is not JSON: ${messageOf(error)}`);
    return undefined;
  }
}

/** The refusal of a body nested deeper than MAX_JSON_DEPTH. */
const tooDeep = () =>
  new GatewayRequestError(400, `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);

/**
 * `text` parsed as JSON; a GatewayRequestError (400) when it nests deeper
 * than MAX_JSON_DEPTH (checked before parsing: nothing walks such a value) or
 * is not JSON, its message starting with `what`.
 */
export function parseJsonBody(text: string): unknown {
  if (jsonDepth(text) > MAX_JSON_DEPTH) throw tooDeep();
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new GatewayRequestError(400, `the body is not JSON: ${messageOf(error)}`);
  }
}

/**
 * The request's body as text, or a GatewayRequestError (413) past `limit`
 * bytes: the rest of such a body is read and dropped (up to 64 MiB), so the
 * sender, still writing, gets the answer rather than a broken pipe.
 */
export function readBody(request: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > limit + MAX_DRAINED_BYTES) request.destroy();
      else chunks.length = 0;
    });
    request.on("end", () => {
      if (size > limit)
        reject(new GatewayRequestError(413, `the body is larger than ${limit} bytes`, "payload_too_large"));
      else resolve(Buffer.concat(chunks).toString("utf8"));
    });
    request.on("error", reject);
    request.on("close", () => reject(new GatewayRequestError(400, "the request was cut off before its body ended")));
  });
}

/** A route: answers one request, or throws (a GatewayRequestError is answered with its status). */
export type Route = (request: IncomingMessage, response: ServerResponse) => Promise<void>;

/** Where the gateway listens and who it lets in. */
export interface ListenOptions {
  host: string;
  port: number;
  /**
   * Who may call, by bearer token (principals.ts): a request's token names its principal. With no
   * token at all, only requests from this machine (Host and Origin), as the sole principal.
   */
  principals: Principals;
  /** Routes by path (no query string); a path ending `/*` serves every path under it; any other path is a 404. */
  routes: Record<string, Route>;
  /** Failures no answer could say (the client went away mid-answer…). */
  onError?: (error: unknown) => void;
  /** Longest a request's headers and body may take to arrive, in ms (a slower one gets 408). Default 30 s. */
  bodyTimeoutMs?: number;
  /** Most connections open at once (one more gets 503). Default 512. */
  maxConnections?: number;
}

/** The listening gateway. */
export interface ListeningGateway {
  server: Server;
  /** Its base URL, e.g. `http://127.0.0.1:7430`. */
  url: string;
  close(): Promise<void>;
}

/** The route of a `/*` path that `path` is under, if any. */
function routeUnder(routes: Record<string, Route>, path: string): Route | undefined {
  for (const [key, route] of Object.entries(routes))
    if (key.endsWith("/*") && path.startsWith(key.slice(0, -1))) return route;
  return undefined;
}

/** What a 500 says: the failure's message, but never a stack overflow's (the request was too big to walk). */
function internalMessage(error: unknown): string {
  return error instanceof RangeError ? "the request was too large or nested too deeply to handle" : messageOf(error);
}

/** An HTTP answer written straight to a socket (no request object to answer): a JSON error, then the connection closes. */
function rawAnswer(status: number, reason: string, code: string, message: string): string {
  const body = `${JSON.stringify({ error: { code, message } })}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** Answers 503 to, and closes, each connection past `max` open at once. */
function capConnections(server: Server, max: number): void {
  let open = 0;
  server.on("connection", (socket) => {
    socket.on("error", () => {}); // a refused client resetting the connection is no failure of ours
    if (open >= max) {
      socket.end(rawAnswer(503, "Service Unavailable", "too_many_connections", `more than ${max} connections open`));
      return;
    }
    open += 1;
    socket.once("close", () => {
      open -= 1;
    });
  });
}

/** Listens; every request is checked for access, routed, and answered even when its route throws. */
export async function listenGateway(options: ListenOptions): Promise<ListeningGateway> {
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 30_000;
  // Node checks its request timeout on this interval: a body trickled in is cut within a second of the timeout.
  const checkEvery = Math.max(100, Math.min(1_000, Math.floor(bodyTimeoutMs / 4)));
  const server = createServer({ connectionsCheckingInterval: checkEvery }, (request, response) => {
    void handle(request, response).catch((error: unknown) => {
      options.onError?.(error);
      if (!response.headersSent) sendError(response, 500, "internal", `internal error: ${internalMessage(error)}`);
      else response.end();
    });
  });
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    if (options.principals.size > 0) {
      const principal = options.principals.resolve(request.headers.authorization);
      if (!principal) {
        request.resume();
        return sendError(response, 401, "unauthorized", "give the gateway's token: Authorization: Bearer <token>");
      }
      admitCaller(request, principal);
    } else if (fromThisMachine(request.headers.host, request.headers.origin)) {
      admitCaller(request, SOLE_PRINCIPAL);
    } else {
      request.resume();
      return sendError(
        response,
        403,
        "forbidden",
        "without a token this gateway serves only this machine (Host and Origin must be loopback)",
      );
    }
    const path = new URL(request.url ?? "/", "http://gateway").pathname;
    const route = Object.hasOwn(options.routes, path) ? options.routes[path] : routeUnder(options.routes, path);
    if (!route) {
      request.resume();
      return sendError(
        response,
        404,
        "not_found",
        `no route ${path}: MCP is served on /mcp (${Object.keys(options.routes).join(", ")})`,
      );
    }
    try {
      await route(request, response);
    } catch (error) {
      if (!(error instanceof GatewayRequestError)) throw error;
      sendError(response, error.status, error.code, error.message);
    }
  };
  server.requestTimeout = bodyTimeoutMs;
  server.headersTimeout = bodyTimeoutMs;
  capConnections(server, options.maxConnections ?? 512);
  // A request Node cannot parse as HTTP is answered 400, one too slow to arrive 408; neither ends the process.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    options.onError?.(error);
    if (!socket.writable) return socket.destroy();
    if (error.code === "ERR_HTTP_REQUEST_TIMEOUT")
      socket.end(
        rawAnswer(
          408,
          "Request Timeout",
          "request_timeout",
          `the request took longer than ${bodyTimeoutMs} ms to arrive`,
        ),
      );
    else socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(error.code === "EADDRINUSE" ? new PortInUseError(options.port) : error),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  server.on("error", (error) => options.onError?.(error));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const shownHost = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    server,
    url: `http://${shownHost}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

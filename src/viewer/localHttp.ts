import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { ConclaveError, messageOf } from "../errors.ts";

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** The port asked for is taken by another process. */
export class PortInUseError extends ConclaveError<"port_in_use"> {
  constructor(port: number) {
    super("port_in_use", `port ${port} on 127.0.0.1 is in use; pick another with --port`);
  }
}

/**
 * Listens on 127.0.0.1 only (port 0: any free port); a port in use is a clear
 * error, not a crash. Requests must name this machine in their Host header, so
 * a web page cannot reach the server through DNS rebinding.
 */
export async function listenLocal(handler: Handler, port: number): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    try {
      const host = (request.headers.host ?? "").replace(/:\d+$/, "");
      if (!["127.0.0.1", "localhost", "[::1]"].includes(host))
        return sendText(response, 403, "text/plain", "only for this machine: open it as http://127.0.0.1\n");
      handler(request, response);
    } catch (error) {
      if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
      response.end(`internal error: ${messageOf(error)}\n`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(error.code === "EADDRINUSE" ? new PortInUseError(port) : error),
    );
    server.listen(port, "127.0.0.1", () => resolve());
  });
  server.on("error", () => {});
  const address = server.address();
  const actualPort = typeof address === "object" && address ? address.port : port;
  return { server, url: `http://127.0.0.1:${actualPort}/` };
}

/** Closes the server, ending keep-alive and streaming responses too. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export function sendText(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    "content-type": `${type}; charset=utf-8`,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  response.end(body);
}

/** A port from `--port`: a whole number 0–65535. */
export function portArg(value: string | undefined, fallback: number): number | null {
  if (value === undefined) return fallback;
  const port = Number(value);
  return Number.isInteger(port) && port >= 0 && port <= 65_535 ? port : null;
}

import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/**
 * A Streamable HTTP MCP server of the SDK on 127.0.0.1, one McpServer per
 * session; `addTool` adds a tool to every live session (each is told with
 * notifications/tools/list_changed); `restart` stops it (its sessions gone) and
 * starts it again on the same port.
 */
export class WeatherServer {
  #http: Server | null = null;
  #sessions: McpServer[] = [];
  #extra: string[] = [];
  port = 0;
  /** Which incarnation answers (bumped by restart). */
  generation = 1;

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  async start(): Promise<void> {
    const transports = new Map<string, StreamableHTTPServerTransport>();
    const http = createServer((req, res) => {
      const sid = req.headers["mcp-session-id"];
      let transport = typeof sid === "string" ? transports.get(sid) : undefined;
      if (!transport && (req.method !== "POST" || sid !== undefined)) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      if (!transport) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created);
          },
        });
        transport = created;
        const server = this.#build();
        this.#sessions.push(server);
        void server.connect(created).then(() => created.handleRequest(req, res));
        return;
      }
      void transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => http.listen(this.port, "127.0.0.1", resolve));
    this.port = (http.address() as AddressInfo).port;
    this.#http = http;
  }

  /** Adds a tool named `name` (answering its name) to every session, each told its list changed. */
  addTool(name: string): void {
    this.#extra.push(name);
    for (const server of this.#sessions) this.#register(server, name);
  }

  async stop(): Promise<void> {
    const http = this.#http;
    this.#http = null;
    await Promise.allSettled(this.#sessions.map((server) => server.close()));
    this.#sessions = [];
    http?.closeAllConnections();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
  }

  /** Stops the server, and starts it again on the same port, its tools then with `added` too. */
  async restart(added: string): Promise<void> {
    await this.stop();
    this.generation++;
    this.#extra.push(added);
    await this.start();
  }

  #build(): McpServer {
    const server = new McpServer(
      { name: "weather", version: "1.0.0" },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.registerTool(
      "Get-Weather.v2",
      {
        description: "The weather in a city.",
        inputSchema: { city: z.string().min(1), days: z.number().int().min(1).max(7).optional() },
        annotations: { readOnlyHint: true },
      },
      ({ city, days }) => ({
        content: [{ type: "text", text: `sunny in ${city} for ${days ?? 1} day(s) (server ${this.generation})` }],
      }),
    );
    server.registerTool(
      "delete_forecast",
      { description: "Deletes a forecast.", inputSchema: { id: z.string() }, annotations: { destructiveHint: true } },
      ({ id }) => ({ content: [{ type: "text", text: `no forecast ${id}` }], isError: true }),
    );
    for (const name of this.#extra) this.#register(server, name);
    return server;
  }

  #register(server: McpServer, name: string): void {
    server.registerTool(name, { description: `Answers ${name}.` }, () => ({
      content: [{ type: "text", text: name }],
    }));
  }
}

/**
 * The hostile run's small defects of `conclave serve` (issue 34), each
 * against a real gateway process (with nats-server, a runner and workers,
 * all processes) and asserting the fixed behaviour: clear 400s rather than
 * a 500 or an empty 200, no stack overflow text, a bounded progressToken,
 * AG-UI's timeout and encoding, the card's address, a slow body cut, a
 * connection cap, and a workflow recipe's state.persistence refused. No
 * gateway here listens beyond loopback.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { connect as connectTcp, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { beforeAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { connect } from "../../src/client/index.ts";
import { createA2aGateway } from "../../src/gateway/a2a/gateway.ts";
import { converseTool } from "../../src/gateway/converse.ts";
import { listenGateway } from "../../src/gateway/http.ts";
import { MAX_JSON_DEPTH, MAX_PROGRESS_TOKEN_LENGTH } from "../../src/gateway/limits.ts";
import { GatewayClients, Principals } from "../../src/gateway/principals.ts";
import { freePort } from "../../src/nats/server.ts";
import { useGatewayStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const stack = useGatewayStack();
/** A gateway with a short turn patience and body timeout, and one with a cap of three connections. */
let patient: string;
let capped: string;

beforeAll(async () => {
  const [a, b] = [await freePort(), await freePort()];
  await Promise.all([
    stack.processes.spawn("gateway-short", ["serve", "--port", String(a), "--timeout", "1500"], {
      CONCLAVE_GATEWAY_BODY_TIMEOUT_MS: "1000",
    }),
    stack.processes.spawn("gateway-capped", ["serve", "--port", String(b)], { CONCLAVE_GATEWAY_MAX_CONNECTIONS: "3" }),
  ]);
  patient = `http://127.0.0.1:${a}`;
  capped = `http://127.0.0.1:${b}`;
});

const A2A = { "content-type": "application/json", "a2a-version": "1.0" };
const MCP = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A raw connection to `base`, and everything it receives until the gateway closes it. */
function rawExchange(base: string, send: string): { socket: Socket; answer: Promise<string> } {
  const { port } = new URL(base);
  const socket = connectTcp(Number(port), "127.0.0.1");
  socket.on("error", () => {});
  socket.write(send);
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk.toString("utf8");
  });
  const answer = new Promise<string>((resolve) => socket.once("close", () => resolve(received)));
  return { socket, answer };
}

/** An AG-UI RunAgentInput saying `text` in `threadId`. */
const runInput = (threadId: string, text: string, state: unknown = {}) => ({
  threadId,
  runId: `${threadId}-run`,
  state,
  messages: [{ id: "u1", role: "user", content: text }],
  tools: [],
  context: [],
  forwardedProps: {},
});

describe("conclave serve against hostile input", () => {
  it("answers a malformed % escape in /a2a/rest with 400, not 500", async () => {
    const response = await fetch(`${stack.baseUrl}/a2a/rest/tasks/%E0%A4%A`, { headers: A2A });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { message: expect.stringMatching(/malformed % escape/) } });
  });

  it("refuses an AG-UI state nested a million deep with a clear 400, before any event", async () => {
    const deep = `${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`;
    const body = JSON.stringify(runInput("agui-deep", "hello")).replace('"state":{}', `"state":${deep}`);
    const response = await fetch(`${stack.baseUrl}/ag-ui`, { method: "POST", headers: MCP, body });
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: { message: string } };
    expect(answer.error.message).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it("never answers with a stack overflow's text, on any route, and goes on serving", async () => {
    const deep = `{"a":${"[".repeat(200_000)}${"]".repeat(200_000)}}`;
    for (const [path, headers] of [
      ["/mcp", MCP],
      ["/a2a", A2A],
      ["/a2a/rest/message:send", A2A],
      ["/ag-ui", MCP],
    ] as const) {
      const response = await fetch(`${stack.baseUrl}${path}`, { method: "POST", headers, body: deep });
      const text = await response.text();
      expect(response.status, path).toBe(400);
      expect(text, path).not.toMatch(/Maximum call stack/i);
      expect(text, path).toMatch(/deeper than/);
    }
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
  });

  it("refuses a progressToken over its documented size, without echoing it", async () => {
    const client = new Client({ name: "hostile-progress", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`)));
    const call = (progressToken: string) =>
      client.request(
        { method: "tools/call", params: { name: "converse", arguments: { text: "hi" }, _meta: { progressToken } } },
        CallToolResultSchema,
      );
    const refused = await call("p".repeat(1_000_000)).then(
      () => null,
      (error: Error) => error,
    );
    expect(refused?.message).toMatch(new RegExp(`at most ${MAX_PROGRESS_TOKEN_LENGTH} characters`));
    expect(refused!.message.length).toBeLessThan(1_000);
    expect((await call("p".repeat(MAX_PROGRESS_TOKEN_LENGTH))).isError).toBeFalsy();
    await client.close();
  });

  it("AG-UI honours serve --timeout: a turn longer than it ends in RUN_ERROR", async () => {
    const response = await fetch(`${patient}/ag-ui`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(runInput("agui-timeout", "slow, please")),
    });
    const events = (await response.text())
      .split("\n\n")
      .filter((frame) => frame.startsWith("data: "))
      .map((frame) => JSON.parse(frame.slice(6)) as { type: string; message?: string });
    expect(events.at(-1)).toMatchObject({ type: "RUN_ERROR", message: expect.stringMatching(/1500/) });
  });

  it("AG-UI answers Accept: */* with its JSON encoding over SSE, not protobuf", async () => {
    const response = await fetch(`${stack.baseUrl}/ag-ui`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "*/*" },
      body: JSON.stringify(runInput("agui-any", "hello there")),
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const text = await response.text();
    expect(text.startsWith("data: {")).toBe(true);
    expect(text).toContain('"type":"RUN_FINISHED"');
  });

  it("a gateway on every address advertises in its card the address each caller reached", async () => {
    // Listening on loopback, told (as a wildcard listener is) that its address is 0.0.0.0.
    const client = await connect({ nc: await stack.nats.connect("client") });
    const a2a = createA2aGateway({
      clients: GatewayClients.single(client),
      tools: [converseTool({ timeoutMs: 5_000 })],
      version: "test",
      token: false,
      timeoutMs: 5_000,
      tasks: { maxTasks: 10, ttlMs: 60_000, maxBytes: 1_000_000 },
    });
    const gateway = await listenGateway({
      host: "127.0.0.1",
      port: 0,
      principals: Principals.sole(null),
      routes: a2a.routes,
    });
    try {
      a2a.listening(gateway.url.replace("127.0.0.1", "0.0.0.0"));
      const card = (await (await fetch(`${gateway.url}/.well-known/agent-card.json`)).json()) as {
        supportedInterfaces: { url: string }[];
      };
      expect(card.supportedInterfaces.map((i) => i.url)).toEqual([`${gateway.url}/a2a`, `${gateway.url}/a2a/rest`]);
      expect(JSON.stringify(card)).not.toContain("0.0.0.0");
    } finally {
      a2a.close();
      await gateway.close();
      await client.close();
    }
  });

  it("cuts a body trickled in slower than the body timeout: 408, connection closed", async () => {
    const { answer } = rawExchange(
      patient,
      "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
    );
    expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
    expect((await fetch(`${patient}/healthz`)).status).toBe(200);
  });

  it("refuses connections over the cap with 503, and serves again once one closes", async () => {
    const held = [0, 1, 2].map(() => rawExchange(capped, ""));
    await Promise.all(held.map(({ socket }) => new Promise((resolve) => socket.once("connect", resolve))));
    const refused = rawExchange(capped, "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    expect(await refused.answer).toMatch(/^HTTP\/1\.1 503 [\s\S]*too_many_connections/);
    for (const { socket } of held) socket.destroy();
    const status = await eventually(
      () =>
        fetch(`${capped}/healthz`).then(
          (response) => response.status,
          () => 0,
        ),
      (code) => code === 200,
      { timeoutMs: 10_000 },
    );
    expect(status).toBe(200);
  });

  it("refuses a workflow recipe's state.persistence at start: one line, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "conclave-hostile-recipes-"));
    copyFileSync(join("recipes", "approval.yaml"), join(dir, "approval.yaml"));
    const recipe = readFileSync(join(dir, "approval.yaml"), "utf8");
    writeFileSync(join(dir, "approval.yaml"), `${recipe}\nstate:\n  persistence: redis\n`);
    const { CONCLAVE_GATEWAY_TOKEN: _, ...env } = process.env;
    const exit = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "serve", "--port", "0", "--recipes", dir], {
      env: { ...env, CONCLAVE_NATS_URL: stack.nats.url },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );
    expect(exit.code).toBe(2);
    expect(exit.stderr.trim().split("\n")).toHaveLength(1);
    expect(exit.stderr).toMatch(/state\.persistence is not read in a workflow recipe; .*state\.backend/);
  });
});

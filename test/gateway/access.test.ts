/**
 * `conclave serve` at its door: no token, no listening beyond loopback; with
 * a token, nothing without it; and every malformed request, on every route,
 * a clear error while the process goes on serving. Only nats-server and the
 * gateway run here: none of this reaches a runner.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN, type ConclaveProcess } from "../../src/cli/childProcess.ts";
import { freePort } from "../../src/nats/server.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const run = promisify(execFile);
const TOKEN = "a-test-token-0123456789abcdef";
let open: { process: ConclaveProcess; url: string };
let guarded: { process: ConclaveProcess; url: string };

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "conclave-gateway-token-"));
  writeFileSync(join(dir, "token"), `${TOKEN}\n`);
  const [openPort, guardedPort] = [await freePort(), await freePort()];
  const [a, b] = await Promise.all([
    processes.spawn("gateway", ["serve", "--port", String(openPort)]),
    // Token mode on loopback: the test never listens beyond this machine.
    processes.spawn("gateway-token", ["serve", "--port", String(guardedPort), "--token-file", join(dir, "token")]),
  ]);
  open = { process: a, url: `http://127.0.0.1:${openPort}` };
  guarded = { process: b, url: `http://127.0.0.1:${guardedPort}` };
});

/** `conclave serve …` run to its end: its exit code and stderr. */
async function serveExit(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stderr: string }> {
  const { CONCLAVE_GATEWAY_TOKEN: _, ...rest } = process.env;
  return run(process.execPath, [CONCLAVE_BIN, "serve", ...args], {
    env: { ...rest, CONCLAVE_NATS_URL: nats.url, ...env },
  }).then(
    () => ({ code: 0, stderr: "" }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
}

const JSON_TYPE = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function post(url: string, body: string, headers: Record<string, string> = JSON_TYPE) {
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function mcpClient(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: "gateway-access-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

/** The gateway still answers MCP and its process still runs. */
async function stillServes(gateway: { process: ConclaveProcess; url: string }, headers: Record<string, string> = {}) {
  const { client } = await mcpClient(gateway.url, headers);
  expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["converse"]);
  await client.close();
  expect(gateway.process.child.exitCode).toBeNull();
}

describe("who may call the gateway", () => {
  it("refuses to listen beyond loopback without a token: one line, exit 2", async () => {
    const { code, stderr } = await serveExit(["--host", "0.0.0.0", "--port", "0"]);
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/listens on 0\.0\.0\.0, beyond loopback, only with a token: give --token-file/);
  });

  it("refuses a token too short, or a token file it cannot read", async () => {
    const short = await serveExit(["--port", "0"], { CONCLAVE_GATEWAY_TOKEN: "short" });
    expect(short).toMatchObject({ code: 2, stderr: expect.stringMatching(/too short: at least 16 characters/) });
    const missing = await serveExit(["--port", "0", "--token-file", "/nonexistent/token"]);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringMatching(/cannot read --token-file .*ENOENT/) });
  });

  it("with a token, answers 401 to any request without it, on every route", async () => {
    for (const [path, method] of [
      ["/mcp", "POST"],
      ["/mcp", "GET"],
      ["/healthz", "GET"],
      ["/elsewhere", "GET"],
    ] as const) {
      const response = await fetch(`${guarded.url}${path}`, {
        method,
        headers: JSON_TYPE,
        ...(method === "POST" ? { body: "{}" } : {}),
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({
        error: { code: "unauthorized", message: "give the gateway's token: Authorization: Bearer <token>" },
      });
    }
    const wrong = await fetch(`${guarded.url}/healthz`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${guarded.url}/healthz`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(right.status).toBe(200);
    await stillServes(guarded, { authorization: `Bearer ${TOKEN}` });
    await expect(mcpClient(guarded.url)).rejects.toThrow(/unauthorized/);
  });

  it("without a token, serves only requests naming this machine (no DNS rebinding, no cross-site page)", async () => {
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const request = httpRequest(`${open.url}/healthz`, { headers }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        });
        request.on("error", reject);
        request.end();
      });
    expect(await status({ host: "evil.example:80" })).toBe(403);
    expect(await status({ origin: "https://evil.example" })).toBe(403);
    expect(await status({ origin: "http://localhost:3000" })).toBe(200);
  });
});

describe("malformed requests", () => {
  it("on /mcp and elsewhere: a clear error each time, and the process keeps serving", async () => {
    const mcp = `${open.url}/mcp`;
    const notJson = await post(mcp, "{not json");
    expect(notJson).toMatchObject({ status: 400, body: { jsonrpc: "2.0", error: { code: -32700 }, id: null } });
    expect(String((notJson.body.error as { message: string }).message)).toMatch(/^the body is not JSON: /);

    expect(await post(mcp, "hello", { "content-type": "text/plain" })).toMatchObject({
      status: 415,
      body: { error: { code: -32600, message: 'Content-Type must be application/json (got "text/plain")' } },
    });
    expect(await post(mcp, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }))).toMatchObject({
      status: 400,
      body: { error: { message: "no MCP session: send initialize first, then give its Mcp-Session-Id header" } },
    });
    expect(await post(mcp, "[1, 2, 3]")).toMatchObject({ status: 400, body: { error: { code: -32600 } } });
    expect(await post(mcp, "{}", { ...JSON_TYPE, "mcp-session-id": "no-such-session" })).toMatchObject({
      status: 404,
      body: { error: { message: expect.stringMatching(/unknown or expired MCP session/) } },
    });
    const get = await fetch(mcp, { headers: { accept: "text/event-stream" } });
    expect(get.status).toBe(400);
    expect((await fetch(mcp, { method: "PUT", body: "x" })).status).toBe(405);
    const huge = await post(mcp, `{"x": "${"a".repeat(5 * 1024 * 1024)}"}`);
    expect(huge).toMatchObject({ status: 413, body: { error: { code: "payload_too_large" } } });
    const elsewhere = await fetch(`${open.url}/nope`, { method: "POST", body: "{oops" });
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({
      error: { code: "not_found", message: expect.stringMatching(/\/mcp/) },
    });

    // Within a live session: broken JSON, a message that is no JSON-RPC, a call whose arguments are no object.
    const { client, transport } = await mcpClient(open.url);
    const session = { ...JSON_TYPE, "mcp-session-id": transport.sessionId ?? "", "mcp-protocol-version": "2025-06-18" };
    expect(await post(mcp, '{"jsonrpc": ', session)).toMatchObject({ status: 400, body: { error: { code: -32700 } } });
    expect(await post(mcp, JSON.stringify({ hello: "world" }), session)).toMatchObject({
      status: 400,
      body: { error: { code: -32700, message: expect.stringMatching(/Invalid JSON-RPC message/) } },
    });
    const badCall = await fetch(mcp, {
      method: "POST",
      headers: session,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "converse", arguments: "hi" },
      }),
    });
    expect(badCall.status).toBe(200);
    expect(await badCall.text()).toContain(
      '"error":{"code":-32602,"message":"MCP error -32602: tools/call: arguments: Invalid input: expected record, received string"}',
    );
    await client.close();

    // Not even HTTP.
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connectTcp(Number(new URL(open.url).port), "127.0.0.1", () => socket.write("HELLO\r\n\r\n"));
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk.toString();
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400/);

    await stillServes(open);
  });
});

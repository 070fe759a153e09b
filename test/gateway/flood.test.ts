/**
 * Issue 34's flood: 10,000 A2A tasks and 2,000 MCP initializes against a real
 * `conclave serve` process (with its nats-server) leave the gateway under its
 * documented memory bound (docs/gateway.md#limits) and serving new callers:
 * its task store and session table are bounded, the oldest going first. The
 * tasks name a skill the gateway lacks, so each is stored and ends at once
 * without a turn: the flood measures the gateway, not a runner.
 */
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { freePort } from "../../src/nats/server.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/** The documented bound on the gateway's resident memory under the default limits (docs/gateway.md#limits). */
const RSS_BOUND_MB = 400;

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const stack = { baseUrl: "", gateway: undefined as unknown as ConclaveProcess };

beforeAll(async () => {
  const port = await freePort();
  stack.gateway = await processes.spawn("gateway", ["serve", "--port", String(port)]);
  stack.baseUrl = `http://127.0.0.1:${port}`;
});

/** Runs `task(i)` for i in [0, count), `width` at a time. */
async function inParallel(count: number, width: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

const A2A_HEADERS = { "content-type": "application/json", "a2a-version": "1.0" };

/** One small A2A task over HTTP+JSON: a skill the gateway does not have, so it fails at once without a turn. */
async function sendTask(i: number): Promise<{ id: string; state: string }> {
  const body = {
    message: {
      messageId: `flood-${i}`,
      role: "ROLE_USER",
      parts: [{ text: `task ${i}` }],
      metadata: { skill: "none" },
    },
  };
  const response = await fetch(`${stack.baseUrl}/a2a/rest/message:send`, {
    method: "POST",
    headers: A2A_HEADERS,
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  const { task } = (await response.json()) as { task: { id: string; status: { state: string } } };
  return { id: task.id, state: task.status.state };
}

/** An MCP initialize over plain HTTP; its session id. */
async function initialize(i: number): Promise<string> {
  const response = await fetch(`${stack.baseUrl}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: `flood-${i}`, version: "1" } },
    }),
  });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  return response.headers.get("mcp-session-id") ?? "";
}

/** The gateway process's resident memory, in MB. */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  if (!line) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(line[1]) / 1024;
}

describe("a flood of A2A tasks and MCP sessions", () => {
  it("leaves the gateway under its memory bound, the oldest forgotten, new callers served", async () => {
    const tasks: { id: string; state: string }[] = [];
    await inParallel(10_000, 32, async (i) => {
      tasks[i] = await sendTask(i);
    });
    expect(tasks.every((task) => task.state === "TASK_STATE_FAILED")).toBe(true);
    const sessions: string[] = [];
    await inParallel(2_000, 32, async (i) => {
      sessions[i] = await initialize(i);
    });
    expect(new Set(sessions).size).toBe(2_000);

    const rss = rssMb(stack.gateway.child.pid!);
    expect(rss).toBeLessThan(RSS_BOUND_MB);

    // The first task is forgotten (1,000 kept by default), the last one kept: its result, without its history.
    const first = await fetch(`${stack.baseUrl}/a2a/rest/tasks/${tasks[0]!.id}`, { headers: A2A_HEADERS });
    expect(first.status).toBe(404);
    const last = await fetch(`${stack.baseUrl}/a2a/rest/tasks/${tasks.at(-1)!.id}`, { headers: A2A_HEADERS });
    expect(last.status).toBe(200);
    const kept = (await last.json()) as { status: { state: string }; history?: unknown[] };
    expect(kept.status.state).toBe("TASK_STATE_FAILED");
    expect(kept.history ?? []).toEqual([]);

    // The least recently used sessions made room: the first is gone, the last still answers.
    const ping = (session: string) =>
      fetch(`${stack.baseUrl}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
      });
    expect((await ping(sessions[0]!)).status).toBe(404);
    expect((await ping(sessions.at(-1)!)).status).toBe(200);

    // A new MCP client and a new A2A task are served.
    const client = new Client({ name: "after-the-flood", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`)));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("converse");
    await client.close();
    expect((await sendTask(10_000)).state).toBe("TASK_STATE_FAILED");
    expect(stack.gateway.child.exitCode).toBeNull();
  }, 120_000);
});

/**
 * One gateway, many callers (issue 34): `conclave serve --principals FILE` against a real stack whose
 * nats-server has a tenant account (alice). Two named clients, crm and ops, and the tenant alice each
 * hold their own token. Each sees only its own work: sessions of the same id are different sessions,
 * another's MCP session, A2A task or contextId is not found, and a named client cannot reach a tenant's
 * session by naming its id.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AgentCard, type Message, type Part, Role, type Task } from "@a2a-js/sdk";
import { type Client as A2aClient, ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { spawnConclave } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { freePort, REPO_ROOT, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { withTenants } from "../../src/nats/tenants.ts";
import { LIST_ALL_TASKS } from "../helpers/a2a.ts";
import { eventually } from "../helpers/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "conclave-principals-gateway-"));
const TOKENS = {
  crm: "crm-token-0123456789abcdef",
  ops: "ops-token-0123456789abcdef",
  alice: "alice-token-0123456789abcdef",
} as const;
type Caller = keyof typeof TOKENS;
const auth = (caller: Caller) => ({ authorization: `Bearer ${TOKENS[caller]}` });

let server: RunningNatsServer;
let conclave: ConclaveClient;
let baseUrl = "";
const children: ReturnType<typeof spawnConclave>[] = [];

beforeAll(async () => {
  const config = join(dir, "nats.conf");
  writeFileSync(
    config,
    withTenants(readFileSync(join(REPO_ROOT, "nats.conf"), "utf8"), [{ name: "alice", password: "alice-secret" }]),
  );
  server = await startNatsServer({ config, port: await freePort(), storeDir: join(dir, "store") });
  for (const [caller, token] of Object.entries(TOKENS)) writeFileSync(join(dir, `${caller}.token`), `${token}\n`);
  writeFileSync(join(dir, "alice.nats"), "alice-secret\n");
  const principals = join(dir, "principals.yaml");
  writeFileSync(
    principals,
    `principals:
  - { name: crm, token_file: ${join(dir, "crm.token")}, approver_roles: [editor] }
  - { name: ops, token_file: ${join(dir, "ops.token")} }
  - name: alice
    token_file: ${join(dir, "alice.token")}
    tenant: alice
    nats: { user: alice, password_file: ${join(dir, "alice.nats")} }
`,
  );
  const env = { ...process.env, CONCLAVE_NATS_URL: server.url, CONCLAVE_LOG: "quiet" };
  const port = await freePort();
  const started = [
    spawnConclave("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"], env),
    spawnConclave("runner", ["runner"], env),
    spawnConclave("gateway", ["serve", "--port", String(port), "--principals", principals], env),
  ];
  children.push(...started);
  await Promise.all(started.map((child) => child.ready));
  baseUrl = `http://127.0.0.1:${port}`;
  conclave = await connect({ nc: await connectBus(busOptions("client", { servers: server.url })) });
}, 60_000);

afterAll(async () => {
  await conclave?.close();
  await Promise.allSettled(children.map((child) => child.stop(5_000)));
  await server?.stop();
});

async function mcpAs(caller: Caller): Promise<{ client: McpClient; transport: StreamableHTTPClientTransport }> {
  const client = new McpClient({ name: `principal-${caller}`, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: auth(caller) },
  });
  await client.connect(transport);
  return { client, transport };
}

async function converse(caller: Caller, sessionId: string, text: string) {
  const { client } = await mcpAs(caller);
  try {
    const result = await client.callTool({ name: "converse", arguments: { session_id: sessionId, text } });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    return result.structuredContent as { session_id: string; turn_id: number };
  } finally {
    await client.close();
  }
}

async function a2aAs(caller: Caller): Promise<A2aClient> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...auth(caller) } });
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] });
  const card = (await (
    await fetch(`${baseUrl}/.well-known/agent-card.json`, { headers: auth(caller) })
  ).json()) as AgentCard;
  return factory.createFromAgentCard(card);
}

const text = (value: string): Part => ({
  content: { $case: "text", value },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});
function a2aMessage(value: string, ids: { contextId?: string; taskId?: string } = {}) {
  const message: Message = {
    messageId: crypto.randomUUID(),
    contextId: ids.contextId ?? "",
    taskId: ids.taskId ?? "",
    role: Role.ROLE_USER,
    parts: [text(value)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: "", message, configuration: undefined, metadata: undefined };
}

describe("a gateway with principals", () => {
  it("refuses a request without a known token", async () => {
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(401);
    expect(
      (await fetch(`${baseUrl}/healthz`, { headers: { authorization: "Bearer not-a-known-token-0000" } })).status,
    ).toBe(401);
    expect((await fetch(`${baseUrl}/healthz`, { headers: auth("ops") })).status).toBe(200);
  });

  it("keeps each principal's sessions apart over MCP, and a tenant's out of a named client's reach", async () => {
    const crm = await converse("crm", "chat1", "I'm stressed about my deadline");
    const ops = await converse("ops", "chat1", "I'm stressed about my deadline");
    // Each knows its session as chat1, and each was the first turn of its own session.
    expect([crm, ops].map(({ session_id, turn_id }) => [session_id, turn_id])).toEqual([
      ["chat1", 1],
      ["chat1", 1],
    ]);
    expect((await conclave.turns("crm-chat1")).map((turn) => turn.turn_id)).toEqual([1]);
    expect((await conclave.turns("ops-chat1")).map((turn) => turn.turn_id)).toEqual([1]);
    expect(await conclave.turns("chat1")).toEqual([]);

    // The tenant's session: alice's chat1 is alice-chat1, reached with alice's own NATS login.
    await converse("alice", "chat1", "I'm stressed about my deadline");
    expect((await conclave.turns("alice-chat1")).map((turn) => turn.turn_id)).toEqual([1]);
    // A named client naming it lands in a session of its own, never in the tenant's.
    await converse("crm", "alice-chat1", "this must not reach alice");
    expect((await conclave.turns("alice-chat1")).map((turn) => turn.turn_id)).toEqual([1]);
    expect((await conclave.turns("crm-alice-chat1")).map((turn) => turn.turn_id)).toEqual([1]);
  });

  it("does not let one principal use another's MCP session", async () => {
    const { client, transport } = await mcpAs("crm");
    try {
      const sessionId = transport.sessionId!;
      const hijack = await fetch(`${baseUrl}/mcp`, {
        method: "POST",
        headers: {
          ...auth("ops"),
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      expect(hijack.status).toBe(404);
      // The owner still uses it.
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("converse");
    } finally {
      await client.close();
    }
  });

  it("scopes A2A tasks: another principal cannot list, read, cancel or answer them", async () => {
    const crm = await a2aAs("crm");
    const ops = await a2aAs("ops");
    const task = (await crm.sendMessage(a2aMessage("my locker code is 4711", { contextId: "crm-ctx" }))) as Task;
    expect(task.id).toBeTruthy();
    expect((await crm.getTask({ tenant: "", id: task.id })).id).toBe(task.id);

    expect((await crm.listTasks(LIST_ALL_TASKS)).tasks.map((each) => each.id)).toContain(task.id);
    const listed = await ops.listTasks(LIST_ALL_TASKS);
    expect(JSON.stringify(listed)).not.toContain("4711");
    expect(JSON.stringify(listed)).not.toContain(task.id);
    await expect(ops.getTask({ tenant: "", id: task.id })).rejects.toThrow(/not found/i);
    await expect(ops.cancelTask({ tenant: "", id: task.id, metadata: undefined })).rejects.toThrow(/not found/i);
    // Answering it is sending a message into it: refused as not found, the task untouched.
    await expect(ops.sendMessage(a2aMessage("answer", { taskId: task.id }))).rejects.toThrow(/not found/i);
    expect((await crm.getTask({ tenant: "", id: task.id })).status?.state).toBe(task.status?.state);
    // The same contextId from another principal is another conversation.
    await ops.sendMessage(a2aMessage("hello", { contextId: "crm-ctx" }));
    expect((await conclave.turns("crm-crm-ctx")).map((turn) => turn.turn_id)).toEqual([1]);
    expect((await conclave.turns("ops-crm-ctx")).map((turn) => turn.turn_id)).toEqual([1]);
  });

  it("drops a principal's A2A tasks when its session is erased under its runtime id", async () => {
    const crm = await a2aAs("crm");
    const alice = await a2aAs("alice");
    const named = (await crm.sendMessage(a2aMessage("my pin is 2468", { contextId: "erase-me" }))) as Task;
    const tenant = (await alice.sendMessage(a2aMessage("my pin is 1357", { contextId: "erase-me" }))) as Task;
    const exists = async (client: A2aClient, id: string) =>
      client.getTask({ tenant: "", id }).then(
        () => true,
        (error: unknown) => (/not found/i.test(String(error)) ? false : Promise.reject(error)),
      );
    expect([await exists(crm, named.id), await exists(alice, tenant.id)]).toEqual([true, true]);
    const both = async () => [await exists(crm, named.id), await exists(alice, tenant.id)];
    // The id the principals know is not their session's in the runtime: nothing of theirs goes (the erase
    // returns once the memory worker has answered and a second has passed: the gateway heard it too).
    await conclave.erase("erase-me");
    expect(await both()).toEqual([true, true]);
    // The runtime's ids: a named client's namespace before it, a tenant's name.
    await conclave.erase("crm-erase-me");
    expect(await eventually(both, ([crmKept]) => crmKept === false)).toEqual([false, true]);
    await conclave.erase("alice-erase-me");
    expect(await eventually(both, ([, aliceKept]) => aliceKept === false)).toEqual([false, false]);
  });

  it("runs an AG-UI thread in the caller's own session", async () => {
    const response = await fetch(`${baseUrl}/ag-ui`, {
      method: "POST",
      headers: { ...auth("ops"), "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        threadId: "thread-9",
        runId: "run-1",
        state: {},
        messages: [{ id: "m1", role: "user", content: "I'm stressed about my deadline" }],
        tools: [],
        context: [],
        forwardedProps: {},
      }),
    });
    expect(response.status).toBe(200);
    const stream = await response.text();
    expect(stream).toContain("RUN_FINISHED");
    expect((await conclave.turns("ops-thread-9")).map((turn) => turn.turn_id)).toEqual([1]);
    expect(await conclave.turns("thread-9")).toEqual([]);
  });
});

/**
 * `conclave serve` as an MCP server, driven by the MCP SDK's own client over
 * Streamable HTTP (and once over stdio) against a real stack: nats-server, a
 * runner, workers with the built-in agents, the recipe agents and a slow
 * agent (to cancel a turn while it runs), all processes.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { MAX_TURN_TEXT } from "../../src/contracts/turn.ts";
import { useGatewayStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const stack = useGatewayStack({ recipes: ["triage.yaml", "approval.yaml"] });
let mcp: Client;

beforeAll(async () => {
  mcp = new Client({ name: "gateway-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${stack.baseUrl}/mcp`)));
});
afterAll(async () => {
  await mcp?.close();
});

describe("conclave serve over Streamable HTTP", () => {
  it("lists converse and one tool per recipe, with the recipe's inputs as its schema", async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(["approval", "converse", "support-triage"]);
    const triage = tools.find((tool) => tool.name === "support-triage");
    expect(triage?.inputSchema).toMatchObject({
      type: "object",
      properties: { message: { type: "string" } },
      required: ["message"],
    });
    expect(tools.find((tool) => tool.name === "converse")?.inputSchema).toMatchObject({ required: ["text"] });
  });

  it("converse advertises the runner's limit on a turn's text, and each tool its outputSchema", async () => {
    const { tools } = await mcp.listTools();
    const converse = tools.find((tool) => tool.name === "converse");
    expect(converse?.inputSchema.properties?.text).toMatchObject({ maxLength: MAX_TURN_TEXT });
    expect(converse?.outputSchema).toMatchObject({
      type: "object",
      required: ["session_id", "turn_id", "reply", "outcome"],
    });
    expect(tools.find((tool) => tool.name === "support-triage")?.outputSchema).toMatchObject({
      type: "object",
      required: ["status", "session_id", "turn_id"],
    });
    // One character over is refused by the tool itself, in one line, before a turn exists.
    const over = await mcp.callTool({ name: "converse", arguments: { text: "x".repeat(MAX_TURN_TEXT + 1) } });
    expect(over.isError).toBe(true);
    expect((over.content as { text: string }[])[0]?.text).toMatch(/^converse: .*16000/);
  });

  it("converse: the turn's events arrive as progress, then the reply; the session goes on", async () => {
    const messages: string[] = [];
    const first = await mcp.callTool(
      { name: "converse", arguments: { text: "I'm stressed about my deadline" } },
      undefined,
      { onprogress: (progress) => messages.push(progress.message ?? "") },
    );
    expect(first.isError).toBeFalsy();
    const result = first.structuredContent as { session_id: string; turn_id: number; reply: string };
    expect(result.session_id).toMatch(/^mcp-[0-9a-f]{12}$/);
    expect(result.turn_id).toBe(1);
    expect(result.reply.length).toBeGreaterThan(0);
    expect(first.content).toEqual([{ type: "text", text: result.reply }]);
    // One notification per stage (and agent, and batch of the voice's chunks): readable lines.
    expect(messages.length).toBeGreaterThan(5);
    expect(messages.some((message) => message.startsWith("▸ "))).toBe(true);
    expect(messages.some((message) => message.includes("› "))).toBe(true);
    expect(messages.at(-1)).toMatch(/Complete/);

    const second = await mcp.callTool({
      name: "converse",
      arguments: { session_id: result.session_id, text: "thanks, that helps" },
    });
    expect(second.structuredContent).toMatchObject({ session_id: result.session_id, turn_id: 2 });
    // A turn's status is marked done just after its TURN_COMPLETED is stored, which the reply waited for.
    await expect
      .poll(async () => (await stack.conclave.turns(result.session_id)).map((turn) => turn.status))
      .toEqual(["done", "done"]);
  });

  it("a recipe tool runs the recipe and returns its outputs", async () => {
    const progress: string[] = [];
    const result = await mcp.callTool(
      { name: "support-triage", arguments: { message: "I was charged twice" } },
      undefined,
      { onprogress: (update) => progress.push(update.message ?? "") },
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      status: "completed",
      outcome: { status: "Complete" },
      output: { message: "I was charged twice", triage: { category: "billing" } },
    });
    expect((result.content as { text: string }[])[0]?.text).toContain('"triage"');
    expect(progress.some((message) => message.includes("classify"))).toBe(true);
  });

  it("a run suspended at a human node is a result saying so, with the command that answers it", async () => {
    const result = await mcp.callTool({ name: "approval", arguments: { topic: "our new API" } });
    expect(result.isError).toBeFalsy();
    const suspended = result.structuredContent as { session_id: string; turn_id: number; answer_with: string };
    expect(suspended).toMatchObject({
      status: "suspended",
      node: "approve",
      prompt: "Publish this draft?",
      required_role: "editor",
    });
    expect(suspended.answer_with).toBe(
      `conclave resume ${suspended.turn_id} --session ${suspended.session_id} --user-id <you> --role editor --input '<json>'`,
    );
    expect((result.content as { text: string }[])[0]?.text).toMatch(
      /^suspended: .*Publish this draft\?\nanswer with: conclave resume/,
    );
    // It truly waits (its status is written just after its TURN_SUSPENDED), and the command's answer completes it.
    const status = await eventually(
      () => stack.conclave.status(suspended.session_id, suspended.turn_id),
      (record) => record?.status === "suspended",
    );
    expect(status?.status).toBe("suspended");
    const done = await stack.conclave.resume(suspended.session_id, suspended.turn_id, {
      input: { approved: true },
      userId: "ana",
      role: "editor",
    });
    expect(done.status).toBe("completed");
  });

  it("cancelling a call cancels its turn: it ends Cancelled", async () => {
    const started = await stack.slowAgentStarted("gw-cancel", 1);
    const abort = new AbortController();
    const call = mcp.callTool(
      { name: "converse", arguments: { session_id: "gw-cancel", text: "slow, please" } },
      undefined,
      {
        signal: abort.signal,
      },
    );
    const settled = call.then(
      () => "resolved",
      (error: unknown) => error,
    );
    await started.seen;
    abort.abort("changed my mind");
    expect(await settled).not.toBe("resolved");
    const status = await eventually(
      () => stack.conclave.status("gw-cancel", 1),
      (record) => record?.status === "done",
      { timeoutMs: 10_000 },
    );
    expect(status).toMatchObject({ status: "done", outcome: "Cancelled" });
    // The gateway goes on serving the same session.
    const next = await mcp.callTool({ name: "converse", arguments: { session_id: "gw-cancel", text: "hello again" } });
    expect(next.structuredContent).toMatchObject({ session_id: "gw-cancel", turn_id: 2 });
  });

  it("bad arguments are an error result of one line, not a failure of the call", async () => {
    const empty = await mcp.callTool({ name: "converse", arguments: { text: "  " } });
    expect(empty).toMatchObject({ isError: true });
    expect((empty.content as { text: string }[])[0]?.text).toMatch(/^converse: text: text must not be empty$/);
    const extra = await mcp.callTool({ name: "converse", arguments: { text: "hi", session_id: "a.b" } });
    expect((extra.content as { text: string }[])[0]?.text).toMatch(/session_id/);
    const inputs = await mcp.callTool({ name: "support-triage", arguments: {} });
    expect(inputs).toMatchObject({ isError: true });
    expect((inputs.content as { text: string }[])[0]?.text).toMatch(/^support-triage: .*message/);
    await expect(mcp.callTool({ name: "nope", arguments: {} })).rejects.toThrow(/unknown tool 'nope'/);
  });
});

describe("conclave serve --stdio", () => {
  it("lists and calls the tools over stdin and stdout", async () => {
    const client = new Client({ name: "gateway-stdio-test", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CONCLAVE_BIN, "serve", "--stdio"],
      env: { ...process.env, CONCLAVE_NATS_URL: stack.nats.url, CONCLAVE_LOG: "quiet" } as Record<string, string>,
      stderr: "inherit",
    });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["converse"]);
      const result = await client.callTool({ name: "converse", arguments: { text: "hello over stdio" } });
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { reply: string }).reply.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });
});

/**
 * One agent that remembers and acts, in the built-in pipeline, in LLM mode:
 * in one turn the agent sees a fact memory learned in an earlier turn, lets
 * the model (the local OpenAI-compatible server, through the real `openai`
 * client) read a note with a real MCP server's read tool
 * (@modelcontextprotocol/server-filesystem, started by the worker), and
 * asks to save a copy with its write tool, which is critical: the turn
 * suspends for a person's approval. The runner is replaced; the approval is
 * answered; the turn goes on from its log (no model call or tool call made
 * twice) and completes. Its episode records the tools it invoked, in both
 * attempts, and memory finds it by either tool (client and CLI).
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect, TurnSuspendedError } from "../../src/client/index.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { until } from "../helpers/wait.ts";
import { FILESYSTEM_SERVER } from "../tools/mcp/helpers.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const notes = realpathSync(mkdtempSync(join(tmpdir(), "conclave-pipeline-tools-")));
const saved = join(notes, "saved.txt");
let model: OpenAIServer;
let client: ConclaveClient;

/** The tool loop's requests: the ones that offer the MCP tools. */
const offersTools = (body: ChatRequestBody) => (body.tools?.length ?? 0) > 0;
const toolResults = (body: ChatRequestBody) => body.messages.filter((message) => message.role === "tool").length;

beforeAll(async () => {
  writeFileSync(join(notes, "notes.txt"), "buy milk\n");
  const servers = join(notes, "..", `${notes.split("/").at(-1)}.mcp.json`);
  writeFileSync(
    servers,
    JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM_SERVER, notes] } } }),
  );
  // The agent's model: read the note, then save it, then answer with what it read.
  model = await startOpenAIServer((body) => {
    if (!offersTools(body)) return { status: 400, body: { error: { message: "only the agent's tool loop asks" } } };
    const step = toolResults(body);
    if (step === 0)
      return { toolCalls: [{ name: "mcp_fs_read_text_file", arguments: JSON.stringify({ path: "notes.txt" }) }] };
    if (step === 1) {
      const read = body.messages.at(-1);
      const text = read?.role === "tool" ? (JSON.parse(read.content) as { content?: string }).content : "";
      return {
        toolCalls: [{ name: "mcp_fs_write_file", arguments: JSON.stringify({ path: saved, content: text }) }],
      };
    }
    return { content: "Saved your note (buy milk) for you in Lisbon." };
  });
  await processes.spawn(
    "assistant",
    ["worker", "--agents", "./test/fixtures/pipelineTools/agents.ts", "--mcp", servers],
    { CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" },
  );
  // The scheduler, council, voice, critics and memory: deterministic (offline), so the model only plays the agent.
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
  await model?.stop();
});

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

describe("a pipeline agent with memory, an MCP read tool and a write that needs approval", () => {
  it("recalls, reads, suspends for the write, and completes once approved after a runner restart", async () => {
    const first = await processes.spawn("runner-1", ["runner"]);
    const session = "remembers-and-acts";
    const learned = await client.submit(session, "I live in Lisbon.").result;
    expect(learned.outcome.status).not.toBe("Failed");

    const asked = client.submit(session, "Please save a copy of my notes.");
    const { turn_id: turnId } = await asked.ack;
    const suspended = await asked.result.catch((error: unknown) => error);
    expect(suspended).toBeInstanceOf(TurnSuspendedError);
    expect((suspended as TurnSuspendedError).node).toBe("agent:acme.assistant");

    // The status is marked suspended just after TURN_SUSPENDED is stored (as `done` after TURN_COMPLETED).
    await until(async () => (await client.approvals(session)).length > 0, {
      what: "the approval listed",
      timeoutMs: 10_000,
    });
    expect(await client.approvals(session)).toEqual([
      expect.objectContaining({
        id: `${session}/${turnId}`,
        tool: "mcp_fs_write_file",
        args: { path: saved, content: "buy milk\n" },
        requiredRole: "operator",
      }),
    ]);
    expect(existsSync(saved)).toBe(false);
    const before = await logOf(session, turnId);
    expect(before.at(-1)?.kind).toBe("TURN_SUSPENDED");
    // The read ran (once) before the suspension; the model was asked twice.
    expect(
      before.filter((event) => event.kind === "TOOL_CALL_FINISHED" && event.payload.tool === "mcp_fs_read_text_file"),
    ).toEqual([expect.objectContaining({ payload: expect.objectContaining({ ok: true }) })]);
    expect(model.requests.filter(offersTools)).toHaveLength(2);

    // The runner goes away; another takes its place: the suspension is in the log and the status.
    await first.stop(5_000);
    await processes.spawn("runner-2", ["runner"]);
    const done = await client.approve(`${session}/${turnId}`, { userId: "ana", reason: "a copy is fine" });
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect(done.outcome.status).not.toBe("Failed");
    expect(readFileSync(saved, "utf8")).toBe("buy milk\n");
    expect(await client.approvals(session)).toEqual([]);

    const events = await logOf(session, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(events.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
    // The agent recalled the fact of the first turn, and the model was told it.
    const answer = events.find(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.assistant",
    );
    expect(answer?.kind === "AGENT_COMPLETED" && answer.payload.output).toMatchObject({
      facts_seen: expect.arrayContaining(["lives in Lisbon"]),
      calls: ["mcp_fs_read_text_file", "mcp_fs_write_file"],
      answer: "Saved your note (buy milk) for you in Lisbon.",
    });
    const toolLoop = model.requests.filter(offersTools);
    expect(toolLoop[0]?.messages[0]?.content).toContain("lives in Lisbon");
    // After the restart only the last model round was asked: the two before came back from the log.
    expect(toolLoop.map(toolResults)).toEqual([0, 1, 2]);
    const finished = events.filter((event) => event.kind === "TOOL_CALL_FINISHED");
    expect(finished.map((event) => event.kind === "TOOL_CALL_FINISHED" && event.payload.tool)).toEqual([
      "mcp_fs_read_text_file",
      "mcp_fs_write_file",
    ]);
    const approved = events.filter(
      (event) => event.kind === "TOOL_CALL_APPROVED" && event.payload.tool === "mcp_fs_write_file",
    );
    expect(approved.map((event) => event.kind === "TOOL_CALL_APPROVED" && event.payload.rule)).toEqual([
      "approved by ana: a copy is fine",
    ]);
    await until(async () => (await client.status(session, turnId))?.status === "done", {
      what: "the turn's status marked done",
      timeoutMs: 10_000,
    });

    // The episode records the tools the turn invoked: the read (first attempt) and the write (after the restart).
    const used = ["mcp_fs_read_text_file", "mcp_fs_write_file"];
    for (const tool of used)
      expect(await client.memory.search(session, "", { tool })).toEqual([
        expect.objectContaining({ id: `episode.${turnId}`, kind: "episode", tools: used }),
      ]);
    expect(await client.memory.search(session, "notes", { tool: "disk_usage" })).toEqual([]);
    // Without a tool, the first turn's episode is found too, naming no tools.
    const episodes = (await client.memory.search(session, "", { limit: 100 })).filter(
      (item) => item.kind === "episode",
    );
    expect(episodes.map((item) => [item.id, item.tools])).toEqual(
      expect.arrayContaining([
        ["episode.1", undefined],
        [`episode.${turnId}`, used],
      ]),
    );
    const cli = await runConclave(nats.url, ["memory", "search", "--session", session, "--tool", "MCP_FS_WRITE_FILE"]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^episode .*tools ${used.join(", ")}\\]\n$`));
  }, 180_000);
});

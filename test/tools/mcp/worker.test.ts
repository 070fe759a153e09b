import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../../src/bus/codec.ts";
import { requestJson } from "../../../src/bus/request.ts";
import { subjects } from "../../../src/bus/subjects.ts";
import { ToolCallReply, type ToolManifest } from "../../../src/contracts/tool.ts";
import { startWorker } from "../../../src/workers/startWorker.ts";
import { runConclave } from "../../helpers/cli.ts";
import { useNatsServer } from "../../helpers/nats.ts";
import { useConclaveProcesses } from "../../helpers/processes.ts";
import { callOf, FILESYSTEM_SERVER } from "./helpers.ts";
import { WeatherServer } from "./weatherServer.ts";

describe("conclave worker --mcp", () => {
  const nats = useNatsServer();
  const processes = useConclaveProcesses(() => nats.url);
  let dir = "";
  let config = "";
  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "conclave-mcp-worker-")));
    writeFileSync(join(dir, "note.txt"), "served over NATS");
    config = join(dir, "mcp.json");
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM_SERVER, dir] } } }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("hosts the MCP server's tools on conclave.tool.<mapped name>, announced with their risk", async () => {
    const nc = await nats.connect("runner");
    const announced = new Promise<ToolManifest[]>((resolve) => {
      const subscription = nc.subscribe(subjects.agentsAnnounce, {
        callback: (_error, msg) => {
          const tools = msg.json<{ tools?: ToolManifest[] }>().tools ?? [];
          if (!tools.some((tool) => tool.name.startsWith("mcp_fs_"))) return;
          subscription.unsubscribe();
          resolve(tools);
        },
      });
    });
    await processes.spawn("mcp-worker", ["worker", "--mcp", config]);
    nc.publish(subjects.agentsRollcall, encodeJson({}));
    const tools = await announced;
    expect(tools.find((tool) => tool.name === "mcp_fs_read_text_file")).toMatchObject({ risk: "safe", effect: "read" });
    expect(tools.find((tool) => tool.name === "mcp_fs_write_file")).toMatchObject({
      risk: "critical",
      effect: "write",
    });

    const reply = await requestJson(
      nc,
      subjects.tool("mcp_fs_read_text_file"),
      callOf("mcp_fs_read_text_file", { path: join(dir, "note.txt") }),
      ToolCallReply,
      { timeoutMs: 30_000 },
    );
    expect(reply).toMatchObject({ tool: "mcp_fs_read_text_file", result: { content: "served over NATS" } });

    const refused = await requestJson(
      nc,
      subjects.tool("mcp_fs_read_text_file"),
      callOf("mcp_fs_read_text_file", { path: 7 }),
      ToolCallReply,
      { timeoutMs: 30_000 },
    ).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "invalid_request" });
  });

  it("refuses a bad --mcp file with one usage line", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ mcpServers: { fs: { args: [] } } }));
    const result = await runConclave(nats.url, ["worker", "--mcp", bad]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/--mcp: .*mcpServers\.fs: give "command"/);
    const missing = await runConclave(nats.url, ["worker", "--mcp", join(dir, "none.json")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--mcp: cannot read /);
  });
});

describe("startWorker({ mcpServers })", () => {
  const nats = useNatsServer();
  const weather = new WeatherServer();
  beforeAll(() => weather.start());
  afterAll(() => weather.stop());

  it("serves and announces a tool its MCP server adds while it runs", async () => {
    const runner = await nats.connect("runner");
    /** The next announcement whose tools include `name`. */
    const announcing = (name: string) =>
      new Promise<ToolManifest[]>((resolve) => {
        const subscription = runner.subscribe(subjects.agentsAnnounce, {
          callback: (_error, msg) => {
            const tools = msg.json<{ tools?: ToolManifest[] }>().tools ?? [];
            if (!tools.some((tool) => tool.name === name)) return;
            subscription.unsubscribe();
            resolve(tools);
          },
        });
      });
    const first = announcing("mcp_weather_delete_forecast");
    const worker = await startWorker({
      nc: await nats.connect("worker"),
      agents: [],
      llm: false,
      mcpServers: { weather: { url: weather.url } },
    });
    try {
      await first;
      expect(worker.tools).toContain("mcp_weather_delete_forecast");
      const later = announcing("mcp_weather_late_tool");
      weather.addTool("late_tool");
      const tools = await later;
      expect(tools.find((tool) => tool.name === "mcp_weather_late_tool")).toMatchObject({
        risk: "standard",
        effect: "write",
      });
      expect(worker.tools).toContain("mcp_weather_late_tool");
      const reply = await requestJson(
        runner,
        subjects.tool("mcp_weather_late_tool"),
        callOf("mcp_weather_late_tool", {}),
        ToolCallReply,
        { timeoutMs: 10_000 },
      );
      expect(reply.result).toBe("late_tool");
    } finally {
      await worker.stop();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HandlerError } from "../../../src/bus/errors.ts";
import type { ToolDefinition } from "../../../src/tools/defineTool.ts";
import { parseMcpConfig } from "../../../src/tools/mcp/config.ts";
import { mcpToolName } from "../../../src/tools/mcp/names.ts";
import { openMcpTools } from "../../../src/tools/mcp/open.ts";
import type { McpToolSource } from "../../../src/tools/mcp/source.ts";
import { runTool } from "../../../src/tools/runTool.ts";
import { callOf } from "./helpers.ts";
import { WeatherServer } from "./weatherServer.ts";

/** Resolves when the source's tools change to hold a tool named `name`. */
function whenListed(source: McpToolSource, name: string): Promise<ToolDefinition> {
  return new Promise((resolve) => {
    const stop = source.onChange(() => {
      const tool = source.tools().find((candidate) => candidate.manifest.name === name);
      if (!tool) return;
      stop();
      resolve(tool);
    });
  });
}

describe("an MCP server over Streamable HTTP", () => {
  const weather = new WeatherServer();
  let source: McpToolSource;
  const warnings: string[] = [];
  const WEATHER = mcpToolName("weather", "Get-Weather.v2");

  beforeAll(async () => {
    await weather.start();
    source = await openMcpTools(parseMcpConfig({ mcpServers: { weather: { url: weather.url } } }), {
      onWarning: (message) => warnings.push(message),
      backoff: { minMs: 20, maxMs: 200 },
    });
  });
  afterAll(async () => {
    await source?.close();
    await weather.stop();
  });

  const tool = (name: string): ToolDefinition => {
    const found = source.tools().find((candidate) => candidate.manifest.name === name);
    if (!found) throw new Error(`no tool ${name}`);
    return found;
  };

  it("serves a tool whose name ToolName rejects under its mapped name, calling it by its own", async () => {
    expect(WEATHER).toMatch(/^mcp_weather_get_weather_v2_[0-9a-f]{8}$/);
    expect(source.origin(WEATHER)).toEqual({ server: "weather", tool: "Get-Weather.v2" });
    expect(tool(WEATHER).manifest).toMatchObject({ risk: "safe", effect: "read" });
    expect(tool("mcp_weather_delete_forecast").manifest).toMatchObject({ risk: "critical", effect: "write" });
    const outcome = await runTool(
      tool(WEATHER),
      callOf(WEATHER, { city: "Oslo", days: 2 }),
      AbortSignal.timeout(10_000),
    );
    expect(outcome.result).toBe("sunny in Oslo for 2 day(s) (server 1)");
  });

  it("refuses invalid arguments as invalid_request, and a tool's isError as a one-line failure", async () => {
    const invalid = await runTool(
      tool(WEATHER),
      callOf(WEATHER, { city: "", days: 9 }),
      AbortSignal.timeout(10_000),
    ).catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(HandlerError);
    expect(invalid).toMatchObject({ code: "invalid_request" });
    expect((invalid as Error).message).toMatch(/city: .*; days: /);
    const failed = await runTool(
      tool("mcp_weather_delete_forecast"),
      callOf("mcp_weather_delete_forecast", { id: "x" }),
      AbortSignal.timeout(10_000),
    ).catch((error: unknown) => error);
    expect(failed).toMatchObject({ code: "tool_failed" });
    expect((failed as Error).message).toBe(
      "tool mcp_weather_delete_forecast failed: MCP tool delete_forecast answered an error: no forecast x",
    );
  });

  it("sees a tool the server adds (notifications/tools/list_changed)", async () => {
    const listed = whenListed(source, "mcp_weather_added_later");
    weather.addTool("added_later");
    const added = await listed;
    const outcome = await runTool(added, callOf("mcp_weather_added_later", {}), AbortSignal.timeout(10_000));
    expect(outcome.result).toBe("added_later");
  });

  it("reconnects after the server restarts, its list read again", async () => {
    const listed = whenListed(source, "mcp_weather_after_restart");
    await weather.restart("after_restart");
    await listed;
    expect(source.connected("weather")).toBe(true);
    const outcome = await runTool(tool(WEATHER), callOf(WEATHER, { city: "Rome" }), AbortSignal.timeout(10_000));
    expect(outcome.result).toBe("sunny in Rome for 1 day(s) (server 2)");
    expect(warnings.some((warning) => /MCP server weather: .*reconnecting in \d+ ms/.test(warning))).toBe(true);
  });
});

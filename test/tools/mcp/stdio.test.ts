import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HandlerError } from "../../../src/bus/errors.ts";
import { isToolDefinition, type ToolDefinition } from "../../../src/tools/defineTool.ts";
import { parseMcpConfig } from "../../../src/tools/mcp/config.ts";
import { mcpToolName } from "../../../src/tools/mcp/names.ts";
import { openMcpTools } from "../../../src/tools/mcp/open.ts";
import type { McpToolSource } from "../../../src/tools/mcp/source.ts";
import { runTool } from "../../../src/tools/runTool.ts";
import { callOf, FILESYSTEM_SERVER } from "./helpers.ts";

const toolNamed = (source: McpToolSource, name: string): ToolDefinition => {
  const tool = source.tools().find((candidate) => candidate.manifest.name === name);
  if (!tool)
    throw new Error(
      `no tool ${name} among ${source
        .tools()
        .map((t) => t.manifest.name)
        .join(", ")}`,
    );
  return tool;
};

describe("an MCP server over stdio (@modelcontextprotocol/server-filesystem)", () => {
  let dir = "";
  let source: McpToolSource;
  beforeAll(async () => {
    // realpath: the server compares paths after resolving symlinks (macOS's /tmp).
    dir = realpathSync(mkdtempSync(join(tmpdir(), "conclave-mcp-fs-")));
    writeFileSync(join(dir, "hello.txt"), "hello from MCP\n");
    source = await openMcpTools(
      parseMcpConfig({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM_SERVER, dir] } } }),
    );
  });
  afterAll(async () => {
    await source?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the server's tools under mapped Conclave names, as tool definitions", () => {
    expect(source.connected("fs")).toBe(true);
    const names = source.tools().map((tool) => tool.manifest.name);
    expect(names).toEqual(
      expect.arrayContaining(["mcp_fs_read_text_file", "mcp_fs_write_file", "mcp_fs_list_directory"]),
    );
    for (const tool of source.tools()) expect(isToolDefinition(tool)).toBe(true);
    expect(source.origin("mcp_fs_read_text_file")).toEqual({ server: "fs", tool: "read_text_file" });
    expect(mcpToolName("fs", "read_text_file")).toBe("mcp_fs_read_text_file");
  });

  it("maps the annotations to risk and effect, and shows the model the server's own input schema", () => {
    expect(toolNamed(source, "mcp_fs_read_text_file").manifest).toMatchObject({ risk: "safe", effect: "read" });
    expect(toolNamed(source, "mcp_fs_write_file").manifest).toMatchObject({ risk: "critical", effect: "write" });
    // create_directory: neither read-only nor destructive.
    expect(toolNamed(source, "mcp_fs_create_directory").manifest).toMatchObject({ risk: "standard", effect: "write" });
    const schema = toolNamed(source, "mcp_fs_read_text_file").manifest.input_schema;
    expect(schema).toMatchObject({ type: "object", properties: { path: { type: "string" } }, required: ["path"] });
    expect(toolNamed(source, "mcp_fs_read_text_file").manifest.description).toMatch(
      /MCP server fs, tool read_text_file/,
    );
  });

  it("calls a read tool and answers its structured content (the server declares an output schema)", async () => {
    const tool = toolNamed(source, "mcp_fs_read_text_file");
    const outcome = await runTool(
      tool,
      callOf(tool.manifest.name, { path: join(dir, "hello.txt") }),
      AbortSignal.timeout(30_000),
    );
    expect(outcome.result).toEqual({ content: "hello from MCP\n" });
  });

  it("refuses arguments the tool's schema rejects before the server is asked, as invalid_request", async () => {
    const tool = toolNamed(source, "mcp_fs_read_text_file");
    const refused = await runTool(tool, callOf(tool.manifest.name, { path: 42 }), AbortSignal.timeout(30_000)).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(HandlerError);
    expect(refused).toMatchObject({ code: "invalid_request" });
    expect((refused as Error).message).toMatch(/^tool mcp_fs_read_text_file: arguments rejected: path: /);
    const missing = await runTool(tool, callOf(tool.manifest.name, {}), AbortSignal.timeout(30_000)).catch(
      (error: unknown) => error,
    );
    expect(missing).toMatchObject({ code: "invalid_request" });
  });

  it("reports the server's own error (isError) as a one-line tool failure", async () => {
    const tool = toolNamed(source, "mcp_fs_read_text_file");
    const failed = await runTool(
      tool,
      callOf(tool.manifest.name, { path: "/etc/passwd" }),
      AbortSignal.timeout(30_000),
    ).catch((error: unknown) => error);
    expect(failed).toMatchObject({ code: "tool_failed" });
    expect((failed as Error).message).toMatch(
      /^tool mcp_fs_read_text_file failed: MCP tool read_text_file answered an error: /,
    );
    expect((failed as Error).message).not.toMatch(/\n/);
  });
});

describe("a stdio MCP server that exits", () => {
  let source: McpToolSource;
  const connected: (() => void)[] = [];
  beforeAll(async () => {
    source = await openMcpTools(
      parseMcpConfig({
        mcpServers: {
          exiting: { command: process.execPath, args: [join(import.meta.dirname, "fixtures/exitingServer.mjs")] },
        },
      }),
      {
        onInfo: (message) => {
          if (/^MCP server exiting: connected/.test(message)) for (const resolve of connected.splice(0)) resolve();
        },
        backoff: { minMs: 20, maxMs: 200 },
      },
    );
  });
  afterAll(() => source?.close());

  it("is started again, and its tools answer from the new process", async () => {
    const pid = toolNamed(source, "mcp_exiting_pid");
    const first = await runTool(pid, callOf("mcp_exiting_pid", {}), AbortSignal.timeout(10_000));
    const reconnected = new Promise<void>((resolve) => connected.push(resolve));
    await runTool(
      toolNamed(source, "mcp_exiting_exit_now"),
      callOf("mcp_exiting_exit_now", {}),
      AbortSignal.timeout(10_000),
    );
    await reconnected;
    const second = await runTool(pid, callOf("mcp_exiting_pid", {}), AbortSignal.timeout(10_000));
    expect(Number(second.result)).toBeGreaterThan(0);
    expect(second.result).not.toBe(first.result);
  });
});

import { describe, expect, it } from "vitest";
import { ToolName } from "../../../src/contracts/tool.ts";
import { parseMcpConfig } from "../../../src/tools/mcp/config.ts";
import { riskOfAnnotations } from "../../../src/tools/mcp/mcpTool.ts";
import { mcpToolName, parseMcpUri, toolNameOfMcpUri } from "../../../src/tools/mcp/names.ts";

describe("mcpToolName", () => {
  it("keeps a tool name that is already a lowercase word, prefixed by its server", () => {
    expect(mcpToolName("fs", "read_text_file")).toBe("mcp_fs_read_text_file");
    expect(mcpToolName("brave-search", "web_search")).toBe("mcp_brave_search_web_search");
  });

  it("maps a name ToolName rejects to a valid one with a stable hash, apart from names a plain mapping would merge", () => {
    const mapped = mcpToolName("weather", "Get-Weather.v2");
    expect(mapped).toMatch(/^mcp_weather_get_weather_v2_[0-9a-f]{8}$/);
    expect(mcpToolName("weather", "Get-Weather.v2")).toBe(mapped);
    expect(mcpToolName("weather", "get_weather_v2")).toBe("mcp_weather_get_weather_v2");
    expect(mcpToolName("weather", "get-weather.v2")).not.toBe(mapped);
    for (const name of [mapped, mcpToolName("weather", "get-weather.v2")])
      expect(ToolName.safeParse(name).success).toBe(true);
  });

  it("cuts a long name to 64 characters, two long names kept apart by their hash", () => {
    const a = mcpToolName("server", `${"x".repeat(80)}_a`);
    const b = mcpToolName("server", `${"x".repeat(80)}_b`);
    expect(a.length).toBeLessThanOrEqual(64);
    expect(ToolName.safeParse(a).success).toBe(true);
    expect(a).not.toBe(b);
  });
});

describe("mcp:// uris", () => {
  it("name a server and a tool, percent-decoded, and bind to the mapped name", () => {
    expect(parseMcpUri("mcp://weather/Get-Weather.v2")).toEqual({ server: "weather", tool: "Get-Weather.v2" });
    expect(parseMcpUri("mcp://fs/a%2Fb")).toEqual({ server: "fs", tool: "a/b" });
    expect(toolNameOfMcpUri("mcp://weather/Get-Weather.v2")).toBe(mcpToolName("weather", "Get-Weather.v2"));
  });

  it("refuse anything else with one line", () => {
    expect(() => parseMcpUri("mcp://weather")).toThrow(/mcp:\/\/<server>\/<tool>/);
    expect(() => parseMcpUri("http://weather/x")).toThrow(/not an MCP tool uri/);
  });
});

describe("annotations", () => {
  it("map readOnlyHint to a safe read, destructiveHint to a critical write, anything else to a standard write", () => {
    expect(riskOfAnnotations({ readOnlyHint: true })).toEqual({ risk: "safe", effect: "read" });
    expect(riskOfAnnotations({ readOnlyHint: false, destructiveHint: true })).toEqual({
      risk: "critical",
      effect: "write",
    });
    expect(riskOfAnnotations({ destructiveHint: false })).toEqual({ risk: "standard", effect: "write" });
    expect(riskOfAnnotations(undefined)).toEqual({ risk: "standard", effect: "write" });
  });
});

describe("parseMcpConfig", () => {
  it("reads stdio and HTTP servers, leaving disabled ones out", () => {
    const servers = parseMcpConfig({
      mcpServers: {
        fs: { command: "npx", args: ["-y", "x"], env: { A: "1" }, autoApprove: [] },
        remote: { url: "http://127.0.0.1:1234/mcp" },
        off: { command: "x", disabled: true },
      },
    });
    expect([...servers.keys()]).toEqual(["fs", "remote"]);
    expect(servers.get("fs")).toMatchObject({ command: "npx", args: ["-y", "x"], env: { A: "1" } });
  });

  it("names what is wrong, on one line", () => {
    expect(() => parseMcpConfig({ servers: {} })).toThrow(/expected \{"mcpServers"/);
    expect(() => parseMcpConfig({ mcpServers: { fs: { args: [] } } })).toThrow(/mcpServers\.fs: give "command"/);
    expect(() => parseMcpConfig({ mcpServers: { fs: { command: 3 } } })).toThrow(/mcpServers\.fs: command/);
    expect(() => parseMcpConfig({ mcpServers: { r: { url: "ftp://x" } } })).toThrow(/mcpServers\.r: url/);
    expect(() => parseMcpConfig({ mcpServers: { "a b": { command: "x" } } })).toThrow(/server name/);
    expect(() => parseMcpConfig({ mcpServers: { a_b: { command: "x" }, "A-b": { command: "y" } } })).toThrow(
      /differs from 'a_b'/,
    );
    expect(() => parseMcpConfig({ mcpServers: { s: { type: "sse", url: "http://x" } } })).toThrow(/sse/);
  });
});

/**
 * Tools from agent modules: `--agents ./my-agent.ts` hosts the module's `defineTool` exports with
 * its agents (no `--tools` needed), the refusal of a tool the agent does not list names the fix,
 * and `conclave send` and `conclave events` show the tool calls in their readable output.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTools, ToolCallRefusedError } from "../../src/agents/agentTools.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { AgentRequest } from "../../src/contracts/agent.ts";
import { OfflineToolModel } from "../../src/llm/offlineModel.ts";
import { freePort } from "../../src/nats/server.ts";
import { defineTool } from "../../src/tools/defineTool.ts";
import { agentModuleTools, mergeTools } from "../../src/tools/loadTools.ts";
import { countWords } from "../fixtures/agentModuleTools/agent.ts";

const MODULE = "./test/fixtures/agentModuleTools/agent.ts";
const dataDir = mkdtempSync(join(tmpdir(), "conclave-agent-tools-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe("the tools of an --agents list", () => {
  it("are its modules' defineTool exports, the same definitions; built-in patterns and tool-less modules add none", async () => {
    expect(await agentModuleTools(`emotion.*, ${MODULE}`)).toEqual([countWords]);
    expect((await agentModuleTools(MODULE))[0]).toBe(countWords);
    expect(await agentModuleTools("./test/fixtures/custom/agents.ts,social.*")).toEqual([]);
  });

  it("merge with --tools once each, and refuse two different tools of one name", () => {
    expect(mergeTools([countWords], [countWords])).toEqual([countWords]);
    const impostor = defineTool({
      name: "acme_count_words",
      description: "Another tool of the same name.",
      risk: "safe",
      input: z.object({}),
      run: () => ({ words: 0 }),
    });
    expect(() => mergeTools([countWords], [impostor])).toThrow(
      "two different tools are named 'acme_count_words': rename one",
    );
  });
});

describe("the refusal of a tool not offered", () => {
  const refusal = async (request: Partial<AgentRequest>) => {
    const tools = agentTools(request as AgentRequest, {
      ask: undefined,
      model: new OfflineToolModel(),
      signal: new AbortController().signal,
      maxTokens: 100,
      count: () => {},
    });
    return (await tools.call("acme_unlisted", {}).catch((error: unknown) => error)) as ToolCallRefusedError;
  };

  it("names the fix: where to list the tool, and how a worker hosts it", async () => {
    const error = await refusal({ tools: [] });
    expect(error).toBeInstanceOf(ToolCallRefusedError);
    expect(error.refusal).toBe("unknown_tool");
    expect(error.message).toBe(
      "tool acme_unlisted: unknown_tool: it is not offered to this agent call: list 'acme_unlisted' in the agent's tools (defineAgent({ tools: [...] })), and a worker must host it: export it with defineTool from the agent's --agents module, or give its module to --tools",
    );
    const inRecipe = await refusal({ tools: [], recipe: { node: "step" } as AgentRequest["recipe"] });
    expect(inRecipe.message).toMatch(/list 'acme_unlisted' in the recipe node's tools, and a worker must host it/);
  });
});

describe("conclave up --agents MODULE (a module with a tool)", () => {
  it("hosts the tool with the agent; send and events show the call, and an unlisted tool's refusal names the fix", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const conclave = `"${process.execPath}" "${CONCLAVE_BIN}"`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        CONCLAVE_BIN,
        "up",
        "--nats-url",
        url,
        "--data-dir",
        dataDir,
        "--agents",
        MODULE,
        "--exec",
        `${conclave} send --session counted "one two three four" && echo "EVENTS_$((1 + 1))" && ${conclave} events --session counted`,
      ],
      { env: { ...process.env, CONCLAVE_LOG: "quiet", CONCLAVE_LLM_MODEL: "offline" }, timeout: 120_000 },
    );
    // The marker as echoed (the command line, also printed, has it unexpanded).
    const [sent, logged] = stdout.split("EVENTS_2\n");
    for (const output of [sent!, logged!]) {
      expect(output).toContain('⚙ acme.counter calls acme_count_words({"text":"one two three four"})');
      expect(output).toMatch(/⚙ acme_count_words → \{"words":4\} \(\d+\.\d\d ms\)/);
      expect(output).toMatch(/✓ acme\.counter .*say "Your message has 4 words\."/);
    }
    // Refused in the worker, before any gate: the agent's own output carries the message (cut at 200 characters).
    expect(sent).toContain(
      `"unlisted":"tool acme_unlisted: unknown_tool: it is not offered to this agent call: list 'acme_unlisted' in the agent's tools`,
    );
  });
});

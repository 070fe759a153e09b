/**
 * startWorker refuses a roster it could not serve before it loads or
 * connects anything: an agent or a tool given twice is a definition error
 * (invalid_agent / invalid_tool, exit 2 in the CLI), not an unknown agent.
 */
import { describe, expect, it } from "vitest";
import { AgentDefinitionError } from "../../src/agents/defineAgent.ts";
import { ToolDefinitionError } from "../../src/tools/defineTool.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { caller } from "../fixtures/inprocess/agents.ts";
import { add } from "../fixtures/inprocess/tools.ts";

// No server: the refusal comes first, so nothing here may try to connect.
const nowhere = { servers: "nats://127.0.0.1:1" };

describe("startWorker's roster", () => {
  it("refuses an agent given twice as a definition error", async () => {
    const starting = startWorker({ agents: [caller, caller], llm: false, connection: nowhere });
    await expect(starting).rejects.toBeInstanceOf(AgentDefinitionError);
    await expect(starting).rejects.toMatchObject({
      code: "invalid_agent",
      message: "agent 'inproc.caller' is given twice",
    });
  });

  it("refuses a tool given twice as a definition error", async () => {
    const starting = startWorker({ agents: [], tools: [add, add], llm: false, connection: nowhere });
    await expect(starting).rejects.toBeInstanceOf(ToolDefinitionError);
    await expect(starting).rejects.toMatchObject({ code: "invalid_tool", message: "tool 'ip_add' is given twice" });
  });
});

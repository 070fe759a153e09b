import { describe, expect, it } from "vitest";
import type { ModelTool } from "../../src/contracts/model.ts";
import { isConclaveError } from "../../src/errors.ts";
import { LlmError } from "../../src/llm/errors.ts";
import { OfflineToolModel } from "../../src/llm/offlineModel.ts";
import { runToolLoop, ToolLoopExhaustedError } from "../../src/llm/toolLoop.ts";
import type { RequestMessage } from "../helpers/openaiServer.ts";
import { modelAgainst, rejection } from "./fixtures.ts";

const diskUsage: ModelTool = {
  name: "disk_usage",
  description: "Bytes used under a path.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const clock: ModelTool = {
  name: "clock",
  description: "The current time.",
  parameters: { type: "object", properties: {} },
};

const ask = { caller: "agent:ops.disk", system: "You check disks.", user: "How full is /tmp?" };

/** The tool messages of a request, by the call they answer. */
const toolMessages = (messages: RequestMessage[]) => messages.filter((message) => message.role === "tool");

describe("runToolLoop against an OpenAI-compatible server", () => {
  it("runs the tool the model asks for, sends its result back, and returns the answer", async () => {
    const { server, model } = await modelAgainst([
      {
        toolCalls: [{ id: "call_a", name: "disk_usage", arguments: '{"path":"/tmp"}' }],
        usage: { prompt_tokens: 30, completion_tokens: 8 },
      },
      { content: "/tmp holds 42 bytes.", usage: { prompt_tokens: 50, completion_tokens: 6 } },
    ]);
    const seen: unknown[] = [];
    const result = await runToolLoop({
      ...ask,
      model,
      tools: [diskUsage, clock],
      maxTokens: 100,
      callTool: async (call) => {
        seen.push(call);
        return { bytes: 42 };
      },
    });

    expect(result).toEqual({
      text: "/tmp holds 42 bytes.",
      calls: [{ id: "call_a", name: "disk_usage", args: { path: "/tmp" }, result: { bytes: 42 } }],
      rounds: 2,
      usage: { prompt_tokens: 80, completion_tokens: 14 },
    });
    expect(seen).toEqual([{ id: "call_a", name: "disk_usage", args: { path: "/tmp" } }]);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]?.tools).toEqual([
      {
        type: "function",
        function: { name: "disk_usage", description: diskUsage.description, parameters: diskUsage.parameters },
      },
      { type: "function", function: { name: "clock", description: clock.description, parameters: clock.parameters } },
    ]);
    expect(server.requests[0]?.max_tokens).toBe(100);
    expect(server.requests[1]?.tools).toHaveLength(2);
    expect(server.requests[1]?.messages).toEqual([
      { role: "system", content: ask.system },
      { role: "user", content: ask.user },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "disk_usage", arguments: '{"path":"/tmp"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: '{"bytes":42}' },
    ]);
  });

  it("leaves tools out of the request when none are offered", async () => {
    const { server, model } = await modelAgainst([{ content: "No tools needed." }]);
    const result = await runToolLoop({ ...ask, model, tools: [], callTool: async () => "unused" });
    expect(result).toMatchObject({ text: "No tools needed.", calls: [], rounds: 1 });
    expect(server.requests[0]).not.toHaveProperty("tools");
  });

  it("feeds arguments that are not JSON back as an error, without calling the tool, and goes on", async () => {
    const { server, model } = await modelAgainst([
      {
        toolCalls: [
          { id: "call_bad", name: "disk_usage", arguments: "{path: /tmp" },
          { id: "call_ok", name: "clock", arguments: "{}" },
        ],
      },
      { content: "Sorry, I sent bad arguments." },
    ]);
    const called: string[] = [];
    const result = await runToolLoop({
      ...ask,
      model,
      tools: [diskUsage, clock],
      callTool: async (call) => {
        called.push(call.name);
        return "12:00";
      },
    });

    expect(called).toEqual(["clock"]);
    expect(result.text).toBe("Sorry, I sent bad arguments.");
    expect(result.calls[0]).toMatchObject({ id: "call_bad", args: "{path: /tmp" });
    expect(result.calls[0]?.error).toMatch(/^arguments are not valid JSON: /);
    expect(result.calls[0]).not.toHaveProperty("result");
    expect(result.calls[1]).toEqual({ id: "call_ok", name: "clock", args: {}, result: "12:00" });
    const [bad, ok] = toolMessages(server.requests[1]?.messages ?? []);
    expect(bad?.tool_call_id).toBe("call_bad");
    expect(JSON.parse(bad?.content ?? "")).toEqual({ error: expect.stringMatching(/^arguments are not valid JSON: /) });
    expect(ok).toEqual({ role: "tool", tool_call_id: "call_ok", content: '"12:00"' });
  });

  it("feeds a tool that throws back as an error and lets the model react", async () => {
    const { server, model } = await modelAgainst([
      { toolCalls: [{ id: "call_1", name: "disk_usage", arguments: '{"path":"/nope"}' }] },
      { toolCalls: [{ id: "call_2", name: "disk_usage", arguments: '{"path":"/tmp"}' }] },
      { content: "/tmp holds 7 bytes." },
    ]);
    const result = await runToolLoop({
      ...ask,
      model,
      tools: [diskUsage],
      callTool: async (call) => {
        const { path } = call.args as { path: string };
        if (path === "/nope") throw new Error("no such path: /nope");
        return { bytes: 7 };
      },
    });

    expect(result.rounds).toBe(3);
    expect(result.text).toBe("/tmp holds 7 bytes.");
    expect(result.calls).toEqual([
      { id: "call_1", name: "disk_usage", args: { path: "/nope" }, error: "no such path: /nope" },
      { id: "call_2", name: "disk_usage", args: { path: "/tmp" }, result: { bytes: 7 } },
    ]);
    expect(toolMessages(server.requests[1]?.messages ?? [])).toEqual([
      { role: "tool", tool_call_id: "call_1", content: '{"error":"no such path: /nope"}' },
    ]);
    // The third request carries the whole conversation: both rounds of calls and results.
    expect(toolMessages(server.requests[2]?.messages ?? []).map((message) => message.tool_call_id)).toEqual([
      "call_1",
      "call_2",
    ]);
  });

  it("throws ToolLoopExhaustedError, carrying the calls, when every round asks for tools", async () => {
    const { server, model } = await modelAgainst([
      { toolCalls: [{ name: "clock", arguments: "{}" }], usage: { prompt_tokens: 10, completion_tokens: 2 } },
    ]);
    let count = 0;
    const error = await rejection(
      runToolLoop({ ...ask, model, tools: [clock], maxRounds: 3, callTool: async () => ++count }),
    );

    expect(error).toBeInstanceOf(ToolLoopExhaustedError);
    expect(isConclaveError(error)).toBe(true);
    expect(error).toMatchObject({
      code: "tool_rounds_exhausted",
      caller: ask.caller,
      rounds: 3,
      usage: { prompt_tokens: 30, completion_tokens: 6 },
    });
    expect((error as ToolLoopExhaustedError).calls.map((call) => call.result)).toEqual([1, 2, 3]);
    expect(server.requests).toHaveLength(3);
  });

  it("stops with the model's LlmError aborted when the signal aborts during a model call", async () => {
    const controller = new AbortController();
    const { server, model } = await modelAgainst((_body, index) => {
      if (index === 0) return { toolCalls: [{ name: "clock", arguments: "{}" }] };
      controller.abort();
      return { hang: true };
    });
    const error = await rejection(
      runToolLoop({ ...ask, model, tools: [clock], signal: controller.signal, callTool: async () => "12:00" }),
    );
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: "aborted", caller: ask.caller });
    expect(server.requests).toHaveLength(2);
  });

  it("runs no more tools once the signal aborts, and sends no further request", async () => {
    const controller = new AbortController();
    const { server, model } = await modelAgainst([
      {
        toolCalls: [
          { name: "clock", arguments: "{}" },
          { name: "disk_usage", arguments: '{"path":"/"}' },
        ],
      },
      { content: "never asked for" },
    ]);
    const called: string[] = [];
    const error = await rejection(
      runToolLoop({
        ...ask,
        model,
        tools: [clock, diskUsage],
        signal: controller.signal,
        callTool: async (call) => {
          called.push(call.name);
          controller.abort();
          return "done";
        },
      }),
    );
    expect(error).toMatchObject({ code: "aborted" });
    expect(called).toEqual(["clock"]);
    expect(server.requests).toHaveLength(1);
  });
});

describe("OfflineToolModel through runToolLoop", () => {
  const offline = { caller: "agent:ops.disk", system: "You check disks.", model: new OfflineToolModel() };

  it("calls a tool named in the text with the JSON object written after it, then reports the result", async () => {
    const seen: unknown[] = [];
    const result = await runToolLoop({
      ...offline,
      user: 'Please run disk_usage {"path": "/tmp", "note": "a } inside"} and tell me.',
      tools: [clock, diskUsage],
      callTool: async (call) => {
        seen.push(call);
        return { bytes: 42 };
      },
    });
    expect(seen).toEqual([{ id: "call_1", name: "disk_usage", args: { path: "/tmp", note: "a } inside" } }]);
    expect(result).toEqual({
      text: 'Done: disk_usage: {"bytes":42}',
      calls: [{ id: "call_1", name: "disk_usage", args: { path: "/tmp", note: "a } inside" }, result: { bytes: 42 } }],
      rounds: 2,
      usage: { prompt_tokens: 0, completion_tokens: 0 },
    });
  });

  it("answers with the user's text, truncated, when no tool is named as a word", async () => {
    const user = `What is the clockwork of disk_usage_total? ${"x".repeat(300)}`;
    const result = await runToolLoop({
      ...offline,
      user,
      tools: [clock, diskUsage],
      callTool: async () => {
        throw new Error("no tool should be called");
      },
    });
    expect(result.text).toBe(`(offline) ${user.slice(0, 200)}`);
    expect(result).toMatchObject({ calls: [], rounds: 1 });
  });

  it("calls two named tools in order of appearance, {} when no object follows, one line per result", async () => {
    const result = await runToolLoop({
      ...offline,
      user: 'First the clock, then disk_usage {"path": "/var"}; the clock again.',
      tools: [diskUsage, clock],
      callTool: async (call) => (call.name === "clock" ? "x".repeat(300) : { bytes: 1 }),
    });
    expect(result.calls.map(({ id, name, args }) => ({ id, name, args }))).toEqual([
      { id: "call_1", name: "clock", args: {} },
      { id: "call_2", name: "disk_usage", args: { path: "/var" } },
    ]);
    expect(result.text).toBe(`Done: clock: ${JSON.stringify("x".repeat(300)).slice(0, 200)}\ndisk_usage: {"bytes":1}`);
  });

  it("does only tool calling: structured and stream fail with bad_request", async () => {
    const model = new OfflineToolModel();
    expect(model.model).toBe("offline");
    await expect(
      model.structured({ caller: "council", system: "", user: "", schema: {} as never, schemaName: "x" }),
    ).rejects.toMatchObject({ code: "bad_request", caller: "council" });
    const stream = model.stream({ caller: "voice", system: "", user: "hi" });
    await expect(
      (async () => {
        for await (const _part of stream) {
        }
      })(),
    ).rejects.toMatchObject({ code: "bad_request", caller: "voice" });
  });
});

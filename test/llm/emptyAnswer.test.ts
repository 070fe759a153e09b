/**
 * A model (or a server in front of it) answering `{}`: an HTTP body `{}` for a
 * chat completion (no `choices`), or a message whose content is `{}` where an
 * object with required fields is expected. Either is an invalid answer: it is
 * retried like any other, and one that never gets better is an `invalid_output`
 * LlmError, never a raw TypeError.
 */
import { describe, expect, it } from "vitest";
import { LlmError } from "../../src/llm/errors.ts";
import type { ScriptedReply } from "../helpers/openaiServer.ts";
import { modelAgainst, rejection, Verdict, validVerdict } from "./fixtures.ts";

const ask = { caller: "critic:safety", system: "s", user: "u", schema: Verdict, schemaName: "verdict" };
const ok = { content: JSON.stringify(validVerdict) };
/** A 200 whose body is `{}`: a chat completion with no `choices`, no message. */
const emptyBody: ScriptedReply = { status: 200, body: {} };
/** A well-formed completion whose message is the JSON object `{}`. */
const emptyObject: ScriptedReply = { content: "{}" };

const expectInvalidOutput = (error: unknown) => {
  expect(error).not.toBeInstanceOf(TypeError);
  expect(error).toBeInstanceOf(LlmError);
  expect(error).toMatchObject({ code: "invalid_output", caller: ask.caller });
  expect((error as Error).message).not.toContain("Cannot read properties");
};

describe("a model answering {}", () => {
  it("retries a completion body of {} like any invalid answer, and succeeds with the next", async () => {
    const { server, model } = await modelAgainst([emptyBody, ok]);
    const result = await model.structured(ask);
    expect(result).toMatchObject({ value: validVerdict, attempts: 2 });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.messages[1]?.content).toContain("Your previous reply was rejected");
  });

  it("gives invalid_output, not a TypeError, when every completion body is {}", async () => {
    const { server, model } = await modelAgainst([emptyBody]);
    const error = await rejection(model.structured(ask));
    expectInvalidOutput(error);
    expect((error as LlmError).message).toMatch(/no choices|no message/);
    expect(server.requests).toHaveLength(2);
  });

  it("retries a message content of {} (required fields missing) and succeeds with the next", async () => {
    const { server, model } = await modelAgainst([emptyObject, ok]);
    expect(await model.structured(ask)).toMatchObject({ value: validVerdict, attempts: 2 });
    expect(server.requests[1]?.messages[1]?.content).toContain("does not match the schema");
  });

  it("gives invalid_output when every message content is {}", async () => {
    const { server, model } = await modelAgainst([emptyObject]);
    expectInvalidOutput(await rejection(model.structured(ask)));
    expect(server.requests).toHaveLength(2);
  });

  it("retries a tool round (complete) whose body is {}, and answers with the next", async () => {
    const { server, model } = await modelAgainst([emptyBody, { content: "done" }]);
    const result = await model.complete({ caller: ask.caller, messages: [{ role: "user", content: "u" }], tools: [] });
    expect(result).toMatchObject({ content: "done", toolCalls: [] });
    expect(server.requests).toHaveLength(2);
  });

  it("gives invalid_output, not a TypeError, when every tool round's body is {}", async () => {
    const { server, model } = await modelAgainst([emptyBody]);
    const error = await rejection(
      model.complete({ caller: ask.caller, messages: [{ role: "user", content: "u" }], tools: [] }),
    );
    expectInvalidOutput(error);
    expect(server.requests).toHaveLength(2);
  });
});

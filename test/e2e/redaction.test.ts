import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * Personal data through the whole path, as a user meets it: a model (the
 * real openai client against a local OpenAI-compatible server, which streams
 * in five-character pieces) puts an e-mail address, a phone number and a
 * card number in its reply and reasoning (an address run straight into a
 * number, cut by a packet boundary right after its `+`), and the user's
 * message carries some too. Nothing of it reaches the stream, the reply or the stored log.
 */
const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model", CONCLAVE_LLM_MAX_RETRIES: "0" }),
);
const RAW = ["alice@example.com", "415 555 0100", "4111 1111 1111 1111", "bob@corp.dev", "7946 0958"];
const events: EngineEvent[] = [];

beforeAll(async () => {
  const cooperative = conclaveModel();
  model = await startOpenAIServer((body, index) =>
    body.stream
      ? {
          reasoning: "Their card 4111 1111 1111 1111 came up; do not repeat it.",
          content: "Write: alice@example.com+1 415 555 0100 today. Or call +1 415 555 0100.",
        }
      : cooperative(body, index),
  );
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  await processes.spawn("runner", ["runner"]);
  const nc = await nats.connect("client");
  const ack = await submitTurn(nc, "pii", { text: "I'm stressed; mail me at bob@corp.dev or call +44 20 7946 0958" });
  await watchTurn(nc, ack, (event) => events.push(event), 30_000);
}, 60_000);
afterAll(async () => {
  await model?.stop();
});

const chunksOf = (streamId: string) =>
  events
    .flatMap((event) =>
      event.kind === "STREAM_CHUNK" && event.payload.stream_id === streamId ? [event.payload.delta] : [],
    )
    .join("");

describe("personal data streamed by a model in five-character pieces", () => {
  it("is redacted in the live stream, across packet boundaries", () => {
    expect(chunksOf("default")).toBe("Write: [email][phone] today. Or call [phone].");
    // The thinking stream carries the council's thinking, then the model's reasoning.
    expect(chunksOf("thinking")).toMatch(/Their card \[card\] came up; do not repeat it\.$/);
    const intercepted = events.flatMap((event) => (event.kind === "RESPONSE_INTERCEPTED" ? [event.payload] : []));
    expect(intercepted.map((payload) => payload.stream_id)).toEqual(expect.arrayContaining(["default", "thinking"]));
  });

  it("is redacted in the rendered reply and the turn's response", () => {
    const rendered = events.filter((event) => event.kind === "VOICE_RENDERED");
    expect(rendered.length).toBeGreaterThan(0);
    for (const event of rendered) expect(event.kind === "VOICE_RENDERED" && event.payload.text).toContain("[email]");
    const completed = events.at(-1);
    expect(completed?.kind === "TURN_COMPLETED" && completed.payload.response).toBe(
      "Write: [email][phone] today. Or call [phone].",
    );
  });

  it("is kept nowhere in the stored log, the user's own message included", () => {
    const started = events.find((event) => event.kind === "TURN_STARTED");
    expect(started?.kind === "TURN_STARTED" && started.payload.user_input).toBe(
      "I'm stressed; mail me at [email] or call [phone]",
    );
    const log = JSON.stringify(events);
    for (const raw of RAW) expect(log.includes(raw), `${raw} is in the log`).toBe(false);
  });
});

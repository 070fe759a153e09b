/**
 * `conclave serve` as an AG-UI agent on `/ag-ui`, driven by AG-UI's own
 * HttpAgent against a real stack: nats-server, a runner, workers with the
 * built-in agents and a slow agent (to go away while a turn runs), all
 * processes.
 */
import { type BaseEvent, EventType, HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { beforeAll, describe, expect, it } from "vitest";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { TurnToAgui } from "../../src/gateway/agui/translate.ts";
import { freePort } from "../../src/nats/server.ts";
import { useGatewayStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const stack = useGatewayStack();
let base: string;
let url: string;

beforeAll(() => {
  base = stack.baseUrl;
  url = `${base}/ag-ui`;
});

/** Runs one turn through `agent`, gathering the events it receives. */
async function run(agent: HttpAgent, text: string) {
  agent.addMessage({ id: `user-${agent.messages.length}`, role: "user", content: text });
  const events: BaseEvent[] = [];
  const result = await agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
  return { events, result };
}

const ofType = <T extends BaseEvent>(events: BaseEvent[], type: EventType) =>
  events.filter((event) => event.type === type) as T[];

describe("conclave serve over AG-UI", () => {
  it("runs a turn: RUN_STARTED, the reply as a text message, RUN_FINISHED; the thread goes on", async () => {
    const agent = new HttpAgent({ url, threadId: "agui-thread" });
    const { events, result } = await run(agent, "I'm stressed about my deadline");
    expect(events[0]).toMatchObject({ type: EventType.RUN_STARTED, threadId: "agui-thread" });
    expect(events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, threadId: "agui-thread" });
    const finished = result.result as { session_id: string; turn_id: number; outcome: { status: string } };
    expect(finished).toMatchObject({ session_id: "agui-thread", turn_id: 1, outcome: { status: "Complete" } });

    const starts = ofType<BaseEvent & { messageId: string; role: string }>(events, EventType.TEXT_MESSAGE_START);
    expect(starts).toHaveLength(1);
    expect(starts[0]?.role).toBe("assistant");
    const deltas = ofType<BaseEvent & { messageId: string; delta: string }>(events, EventType.TEXT_MESSAGE_CONTENT);
    expect(deltas.length).toBeGreaterThan(1); // streamed, not sent whole
    expect(deltas.every((delta) => delta.messageId === starts[0]?.messageId)).toBe(true);
    expect(ofType(events, EventType.TEXT_MESSAGE_END)).toHaveLength(1);
    const reply = deltas.map((delta) => delta.delta).join("");
    const completed = (await collect(stack.conclave.events("agui-thread"))).find(
      ({ event }) => event.kind === "TURN_COMPLETED",
    )?.event as { payload: { response: string } } | undefined;
    // Its status is marked done just after TURN_COMPLETED is stored, which the run already waited for.
    await expect.poll(async () => (await stack.conclave.turns("agui-thread"))[0]?.status).toBe("done");
    expect(reply).toBe(completed?.payload.response);
    // The agent's messages: the user's, then the reply.
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: reply });

    // The stages as steps and as the shared state.
    const steps = ofType<BaseEvent & { stepName: string }>(events, EventType.STEP_STARTED).map((step) => step.stepName);
    expect(steps).toContain("council");
    expect(ofType(events, EventType.STEP_FINISHED)).toHaveLength(steps.length);
    expect(agent.state).toMatchObject({ stage: steps.at(-1) });
    expect(Object.values((agent.state as { agents: Record<string, string> }).agents)).toContain("done");

    const second = await run(agent, "thanks, that helps");
    expect(second.result.result).toMatchObject({ session_id: "agui-thread", turn_id: 2 });
    // A turn's status is marked done just after its TURN_COMPLETED is stored, which the run already waited for.
    await expect
      .poll(async () => (await stack.conclave.turns("agui-thread")).map((record) => record.status))
      .toEqual(["done", "done"]);
    expect(ofType(second.events, EventType.TEXT_MESSAGE_CONTENT).length).toBeGreaterThan(0);
  });

  it("a client that goes away cancels its turn", async () => {
    const started = await stack.slowAgentStarted("agui-gone", 1);
    const agent = new HttpAgent({ url, threadId: "agui-gone" });
    agent.addMessage({ id: "user-0", role: "user", content: "slow, please" });
    const running = agent.runAgent().then(
      () => "finished",
      () => "aborted",
    );
    await started.seen;
    agent.abortRun();
    await running;
    const status = await eventually(
      () => stack.conclave.status("agui-gone", 1),
      (record) => record?.status === "done",
      { timeoutMs: 10_000 },
    );
    expect(status).toMatchObject({ status: "done", outcome: "Cancelled" });
  });

  it("answers malformed requests with one line of JSON, and goes on serving", async () => {
    const post = (body: string, type = "application/json") =>
      fetch(url, { method: "POST", headers: { "content-type": type }, body });
    const cases: [Promise<Response>, number, RegExp][] = [
      [post("{not json"), 400, /the body is not JSON/],
      [post("[]"), 400, /not an AG-UI RunAgentInput/],
      [post(JSON.stringify({ threadId: "t", runId: "r" })), 400, /messages/],
      [post(JSON.stringify(input("a.b", "hello"))), 400, /threadId "a\.b" cannot name a Conclave session/],
      [post(JSON.stringify({ ...input("t", "x"), messages: [] })), 400, /no user message/],
      [post(JSON.stringify(input("t", "   "))), 400, /no text/],
      [post("{}", "text/plain"), 415, /Content-Type must be application\/json/],
      [fetch(url), 405, /POST a RunAgentInput/],
      [fetch(url, { method: "PUT", body: "x" }), 405, /not allowed/],
    ];
    for (const [answer, status, message] of cases) {
      const response = await answer;
      expect(response.status).toBe(status);
      const text = await response.text();
      expect(text.trim().split("\n")).toHaveLength(1);
      expect((JSON.parse(text) as { error: { message: string } }).error.message).toMatch(message);
    }
    expect(stack.gateway.child.exitCode).toBeNull();
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const { events } = await run(new HttpAgent({ url, threadId: "agui-after" }), "still there?");
    expect(events.at(-1)?.type).toBe(EventType.RUN_FINISHED);
  });

  it("with a token, runs only for a client that gives it", async () => {
    const token = "agui-test-token-0123456789";
    const port = await freePort();
    await stack.processes.spawn("gateway-token", ["serve", "--port", String(port)], { CONCLAVE_GATEWAY_TOKEN: token });
    const guarded = `http://127.0.0.1:${port}/ag-ui`;
    const refused = await fetch(guarded, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(input("agui-token", "hi")),
    });
    expect(refused.status).toBe(401);
    const agent = new HttpAgent({
      url: guarded,
      threadId: "agui-token",
      headers: { Authorization: `Bearer ${token}` },
    });
    const { events } = await run(agent, "hello with a token");
    expect(events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, threadId: "agui-token" });
  });

  it("lets a page of this machine call it (CORS preflight), not a page elsewhere", async () => {
    const preflight = await fetch(url, {
      method: "OPTIONS",
      headers: { origin: "http://localhost:3000", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
    const foreign = await fetch(url, {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify(input("agui-foreign", "hi")),
    });
    expect(foreign.status).toBe(403);
  });
});

describe("a turn's events as AG-UI events", () => {
  let seq = 0;
  const event = (kind: string, payload: object) =>
    ({ session_id: "s", turn_id: 1, seq: seq++, ts_monotonic: 0, kind, payload }) as unknown as EngineEvent;
  const call = { call_id: "scout/1/0", tool: "search", agent_id: "scout" };

  it("maps tool calls, stages, agents and a restarted reply, each event valid by AG-UI's schema", () => {
    const translator = new TurnToAgui("run-9");
    const events = [
      translator.snapshot(),
      ...[
        event("TURN_STAGE_CHANGED", { stage: "council" }),
        event("WAVE_STARTED", { wave: 0, agent_count: 1, agents: ["scout"] }),
        event("TOOL_CALL_REQUESTED", { ...call, args: { q: "x" }, risk: "safe", effect: "read", mode: "live" }),
        event("TOOL_CALL_FINISHED", { ...call, ok: true, result: { hits: 2 }, elapsed_ms: 3 }),
        event("TOOL_CALL_DENIED", { ...call, call_id: "scout/1/1", refusal: "denied", rule: "r", message: "no" }),
        event("AGENT_FAILED", { wave: 0, agent_id: "a/b~c", code: "timeout", message: "slow" }),
        event("TURN_STAGE_CHANGED", { stage: "voice" }),
        event("STREAM_START", { stream_id: "thinking", content_type: "text/plain", attempt: 1 }),
        event("STREAM_CHUNK", { stream_id: "thinking", index: 0, delta: "hmm" }),
        event("STREAM_START", { stream_id: "default", content_type: "text/plain", attempt: 1 }),
        event("STREAM_CHUNK", { stream_id: "default", index: 0, delta: "Hel" }),
        event("STREAM_START", { stream_id: "default", content_type: "text/plain", attempt: 1, restarted: true }),
        event("STREAM_CHUNK", { stream_id: "default", index: 0, delta: "Hello" }),
        event("STREAM_CHUNK", { stream_id: "default", index: 1, delta: "" }),
      ].flatMap((one) => translator.translate(one)),
      ...translator.finish("Hello"),
    ];
    for (const one of events) expect(EventSchema.safeParse(one).success, JSON.stringify(one)).toBe(true);
    expect(events.map((one) => one.type)).toEqual([
      EventType.STATE_SNAPSHOT,
      EventType.STEP_STARTED,
      EventType.STATE_DELTA,
      EventType.STATE_DELTA,
      EventType.TOOL_CALL_START,
      EventType.TOOL_CALL_ARGS,
      EventType.TOOL_CALL_END,
      EventType.TOOL_CALL_RESULT,
      EventType.TOOL_CALL_RESULT,
      EventType.STATE_DELTA,
      EventType.STEP_FINISHED,
      EventType.STEP_STARTED,
      EventType.STATE_DELTA,
      EventType.TEXT_MESSAGE_START,
      EventType.TEXT_MESSAGE_CONTENT,
      EventType.TEXT_MESSAGE_END,
      EventType.TEXT_MESSAGE_START,
      EventType.TEXT_MESSAGE_CONTENT,
      EventType.TEXT_MESSAGE_END,
      EventType.STEP_FINISHED,
    ]);
    expect(events[4]).toMatchObject({ toolCallId: "scout/1/0", toolCallName: "search" });
    expect(events[5]).toMatchObject({ delta: '{"q":"x"}' });
    expect(events[7]).toMatchObject({ toolCallId: "scout/1/0", content: '{"ok":true,"result":{"hits":2}}' });
    expect(events[8]).toMatchObject({ toolCallId: "scout/1/1", content: '{"ok":false,"error":"no"}' });
    expect(events[9]).toMatchObject({ delta: [{ op: "add", path: "/agents/a~1b~0c", value: "failed" }] });
    expect(events.filter((one) => one.type === EventType.TEXT_MESSAGE_START)).toMatchObject([
      { messageId: "run-9-reply" },
      { messageId: "run-9-reply-2" },
    ]);
    expect(translator.state).toEqual({ stage: "voice", agents: { scout: "running", "a/b~c": "failed" } });
  });

  it("sends a reply that was not streamed as one message at the end", () => {
    const translator = new TurnToAgui("run-1");
    const events = translator.finish("All done.");
    expect(events).toMatchObject([
      { type: EventType.TEXT_MESSAGE_START, messageId: "run-1-reply" },
      { type: EventType.TEXT_MESSAGE_CONTENT, delta: "All done." },
      { type: EventType.TEXT_MESSAGE_END },
    ]);
    expect(new TurnToAgui("run-2").finish("")).toEqual([]);
  });
});

function input(threadId: string, text: string) {
  return {
    threadId,
    runId: "run-1",
    messages: [{ id: "m1", role: "user", content: text }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of iterable) all.push(item);
  return all;
}

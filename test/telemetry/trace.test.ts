import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../../src/client/index.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { setupTracing } from "../../src/telemetry/setup.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { eventually } from "../helpers/wait.ts";
import { type ReceivedSpan, useOtlpReceiver } from "./otlpReceiver.ts";

const nats = useNatsServer();
const receiver = useOtlpReceiver();
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: "50",
  }),
);

/** OTLP span kinds, as the receiver gets them. */
const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
const SERVICES = { runner: "test-runner", agents: "test-agents", core: "test-core", tools: "test-tools" } as const;

// The client is this test process: its own provider keeps its spans in memory.
const clientSpans = new InMemorySpanExporter();
const clientProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(clientSpans)] });

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(clientProvider);
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*"], { OTEL_SERVICE_NAME: SERVICES.agents }),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"], {
      OTEL_SERVICE_NAME: SERVICES.core,
    }),
    processes.spawn(
      "tools",
      ["worker", "--agents", "./test/fixtures/tools/agents.ts", "--tools", "./test/fixtures/tools/tools.ts"],
      { OTEL_SERVICE_NAME: SERVICES.tools, CONCLAVE_TEST_TOOL_DIR: mkdtempSync(join(tmpdir(), "conclave-trace-")) },
    ),
  ]);
  await processes.spawn("runner", ["runner"], { OTEL_SERVICE_NAME: SERVICES.runner });
});

afterAll(async () => {
  await clientProvider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

/** The received spans of one trace, once the runner's turn span and spans of both workers are in (or the deadline). */
function traceOf(traceId: string): Promise<ReceivedSpan[]> {
  return eventually(
    async () => receiver.spans.filter((span) => span.traceId === traceId),
    (spans) =>
      spans.some((span) => span.service === SERVICES.runner && span.name === "conclave.turn") &&
      spans.some((span) => span.service === SERVICES.agents) &&
      spans.some((span) => span.service === SERVICES.core),
    { timeoutMs: 20_000, everyMs: 50 },
  );
}

describe("a turn traced across processes", () => {
  it("is one trace from the client's submit span through the runner to both workers", async () => {
    const nc = await nats.connect("client");
    const ack = await submitTurn(nc, "traced", { text: "I'm feeling stressed and overwhelmed by my deadline" });
    const completed = await watchTurn(nc, ack, () => {}, 20_000);
    expect(completed.payload.outcome.status).not.toBe("Failed");

    const submit = clientSpans.getFinishedSpans().find((span: ReadableSpan) => span.name === "conclave.turn.submit");
    expect(submit).toBeDefined();
    const traceId = submit!.spanContext().traceId;
    expect(submit!.attributes["conclave.turn_id"]).toBe(ack.turn_id);

    const spans = await traceOf(traceId);
    expect(receiver.problems).toEqual([]);
    const byId = new Map(spans.map((span) => [span.spanId, span]));

    // The runner's turn span continues the client's submit span (its context came through the WAL entry).
    const turn = spans.find((span) => span.service === SERVICES.runner && span.name === "conclave.turn");
    expect(turn).toMatchObject({ parentSpanId: submit!.spanContext().spanId, kind: KIND.consumer });
    expect(turn!.attributes).toMatchObject({ "conclave.session_id": "traced", "conclave.turn_id": ack.turn_id });

    // Its stages are its children.
    const stages = spans.filter((span) => span.service === SERVICES.runner && span.parentSpanId === turn!.spanId);
    expect(stages.map((span) => span.name)).toEqual(
      expect.arrayContaining(["conclave.retrieveMemory", "conclave.planWaves", "conclave.decide"]),
    );

    // Every worker span of a request has a runner span as its parent: the requests carried their context.
    for (const service of [SERVICES.agents, SERVICES.core]) {
      const served = spans.filter((span) => span.service === service && span.kind === KIND.server);
      expect(served.length, `server spans of ${service}`).toBeGreaterThan(0);
      for (const span of served) {
        const parent = byId.get(span.parentSpanId);
        expect(parent, `parent of ${service}'s ${span.name}`).toMatchObject({
          service: SERVICES.runner,
          kind: KIND.client,
          name: span.name,
        });
      }
    }

    // Agent runs carry the GenAI attributes, under the request that asked for them.
    const agentRuns = spans.filter(
      (span) =>
        span.service === SERVICES.agents && span.kind === KIND.internal && span.name.startsWith("invoke_agent "),
    );
    expect(agentRuns.length).toBeGreaterThan(0);
    for (const run of agentRuns) {
      const agent = run.name.slice("invoke_agent ".length);
      expect(run.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.provider.name": "conclave.offline",
        "conclave.session_id": "traced",
        "conclave.turn_id": ack.turn_id,
      });
      expect(byId.get(run.parentSpanId)).toMatchObject({ service: SERVICES.agents, kind: KIND.server });
    }
    const asked = spans.filter(
      (span) => span.service === SERVICES.runner && span.kind === KIND.client && span.name.startsWith("invoke_agent "),
    );
    for (const request of asked) expect(request.attributes["gen_ai.operation.name"]).toBe("invoke_agent");
  });
});

describe("a tool call traced", () => {
  it("goes from the agent's worker through the runner's gate to the tool's worker, in the turn's trace", async () => {
    const client = await connect({ nc: await nats.connect("client") });
    const run = await client.run(
      "traced-tools",
      {
        apiVersion: "coreason.ai/v2",
        kind: "Recipe",
        metadata: { name: "traced-tools" },
        policy: { max_retries: 0 },
        definitions: {
          test_add: { type: "tool", id: "test_add", name: "test_add" },
          actor: { type: "agent", id: "tester.caller", tools: ["test_add"] },
        },
        workflow: { start: "act", steps: { act: { type: "agent", agent: "actor" } } },
      },
      { inputs: { calls: [{ tool: "test_add", args: { a: 2, b: 3 } }] } },
    );
    expect(run.status).toBe("completed");
    const submit = clientSpans
      .getFinishedSpans()
      .find(
        (span) => span.name === "conclave.turn.submit" && span.attributes["conclave.session_id"] === "traced-tools",
      );
    const traceId = submit!.spanContext().traceId;
    const spans = await eventually(
      async () => receiver.spans.filter((span) => span.traceId === traceId),
      (found) => found.some((span) => span.service === SERVICES.tools && span.name === "execute_tool test_add"),
      { timeoutMs: 20_000, everyMs: 50 },
    );
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const executed = spans.find(
      (span) => span.service === SERVICES.tools && span.kind === KIND.internal && span.name === "execute_tool test_add",
    );
    expect(executed?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "test_add",
      "conclave.session_id": "traced-tools",
    });
    // tool worker (execute) ← its server span ← the runner's request, made for the gate's call ← the agent's run.
    const served = byId.get(executed!.parentSpanId);
    expect(served).toMatchObject({ service: SERVICES.tools, kind: KIND.server, name: "execute_tool test_add" });
    const asked = byId.get(served!.parentSpanId);
    expect(asked).toMatchObject({ service: SERVICES.runner, kind: KIND.client, name: "execute_tool test_add" });
    const gate = byId.get(asked!.parentSpanId);
    expect(gate).toMatchObject({ service: SERVICES.tools, kind: KIND.client });
    expect(gate!.name).toMatch(/^conclave\.toolgate/);
    expect(byId.get(gate!.parentSpanId)).toMatchObject({ name: "invoke_agent tester.caller", kind: KIND.internal });
  });
});

describe("tracing off", () => {
  it("is off without OTEL variables, and with OTEL_SDK_DISABLED whatever else is set", async () => {
    const unset = await setupTracing({ serviceName: "conclave-client", env: {} });
    expect(unset.enabled).toBe(false);
    expect(unset.description).toMatch(/off/);
    const disabled = await setupTracing({
      serviceName: "conclave-client",
      env: { OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    });
    expect(disabled).toMatchObject({ enabled: false, description: expect.stringMatching(/OTEL_SDK_DISABLED/) });
  });

  it("a client process without OTEL variables exports nothing and sends no trace context", async () => {
    const blank = {
      OTEL_TRACES_EXPORTER: "",
      OTEL_EXPORTER_OTLP_ENDPOINT: "",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
      OTEL_SERVICE_NAME: "",
      OTEL_SDK_DISABLED: "",
    };
    const sent = await runConclave(nats.url, ["send", "--session", "untraced", "--json", "hello there"], blank);
    expect(sent.code, sent.stderr).toBe(0);
    // The turn is traced by the runner all the same, as a trace of its own: nothing came from the client.
    const turns = await eventually(
      async () =>
        receiver.spans.filter(
          (span) => span.name === "conclave.turn" && span.attributes["conclave.session_id"] === "untraced",
        ),
      (found) => found.length > 0,
      { timeoutMs: 20_000, everyMs: 50 },
    );
    expect(turns).toHaveLength(1);
    expect(turns[0]!.parentSpanId).toBe("");
    expect(receiver.spans.filter((span) => span.service === "conclave-client")).toEqual([]);
    expect(receiver.spans.filter((span) => span.name === "conclave.turn.submit")).toEqual([]);
  });
});

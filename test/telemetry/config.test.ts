import { headers } from "@nats-io/nats-core";
import { context, propagation, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { requestSpanOf } from "../../src/bus/requestSpans.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { TracingConfigError, tracingConfigFromEnv } from "../../src/telemetry/config.ts";
import { contextFromHeaders, copyTraceHeaders, traceHeaders } from "../../src/telemetry/natsHeaders.ts";
import { tracingServiceName } from "../../src/telemetry/setup.ts";
import { inSpan, tracingActive } from "../../src/telemetry/tracer.ts";

describe("tracingConfigFromEnv", () => {
  it("is off by default", () => {
    expect(tracingConfigFromEnv({})).toMatchObject({ on: false });
    expect(tracingConfigFromEnv({ OTEL_SERVICE_NAME: "x", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toMatchObject({
      on: false,
    });
  });

  it("is on for otlp or console exporters, and for an OTLP endpoint when no exporter is named", () => {
    expect(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: "otlp" })).toEqual({
      on: true,
      exporters: ["otlp"],
      protocol: "http/protobuf",
      warnings: [],
    });
    expect(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: " Console , otlp" })).toMatchObject({
      on: true,
      exporters: ["console", "otlp"],
    });
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toMatchObject({
      on: true,
      exporters: ["otlp"],
    });
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })).toMatchObject({
      on: true,
    });
  });

  it("lets OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none win over an endpoint", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(
      tracingConfigFromEnv({ ...endpoint, OTEL_SDK_DISABLED: "TRUE", OTEL_TRACES_EXPORTER: "otlp" }),
    ).toMatchObject({ on: false, reason: "OTEL_SDK_DISABLED=true" });
    expect(tracingConfigFromEnv({ ...endpoint, OTEL_TRACES_EXPORTER: "none" })).toMatchObject({ on: false });
    expect(tracingConfigFromEnv({ ...endpoint, OTEL_SDK_DISABLED: "false" })).toMatchObject({ on: true });
  });

  it("leaves out exporters it does not know, with a warning", () => {
    expect(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: "zipkin,otlp" })).toMatchObject({
      on: true,
      exporters: ["otlp"],
      warnings: [expect.stringMatching(/zipkin not supported/)],
    });
    expect(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: "jaeger" })).toMatchObject({
      on: false,
      warnings: [expect.stringMatching(/jaeger/)],
    });
  });

  it("takes the traces protocol over the general one, and refuses what is not OTLP/HTTP", () => {
    expect(
      tracingConfigFromEnv({
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      }),
    ).toMatchObject({ protocol: "http/json" });
    expect(() => tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(
      TracingConfigError,
    );
    expect(() => tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL="grpc".*http\/protobuf or http\/json/,
    );
  });

  it("names each process's service by its role", () => {
    expect(["runner", "worker", "client", "observer"].map(tracingServiceName)).toEqual([
      "conclave-runner",
      "conclave-worker",
      "conclave-client",
      "conclave-client",
    ]);
  });
});

describe("request spans", () => {
  it("are named for what they ask: an agent, a tool, or the endpoint without its id", () => {
    const agent = requestSpanOf(subjects.agent("emotion.stress"), { session_id: "s", turn_id: 2 });
    expect(agent.name).toBe("invoke_agent emotion.stress");
    expect(agent.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "emotion.stress",
      "conclave.session_id": "s",
      "conclave.turn_id": 2,
    });
    expect(requestSpanOf(subjects.tool("disk_usage"), {})).toMatchObject({
      name: "execute_tool disk_usage",
      attributes: { "gen_ai.tool.name": "disk_usage" },
    });
    expect(requestSpanOf(subjects.critic("safety"), {}).name).toBe("conclave.critic.safety");
    expect(requestSpanOf(subjects.councilDecide, {}).name).toBe("conclave.council.decide");
    expect(requestSpanOf(subjects.turnWatch("some-session"), {}).name).toBe("conclave.turn.watch");
    expect(requestSpanOf(subjects.memoryCommit, { episode: { session_id: "s", turn_id: 3 } }).attributes).toMatchObject(
      { "conclave.session_id": "s", "conclave.turn_id": 3 },
    );
  });
});

describe("trace context in NATS headers", () => {
  const exporter = new InMemorySpanExporter();
  afterEach(() => {
    trace.disable();
    propagation.disable();
    context.disable();
    exporter.reset();
  });

  it("is inactive, and writes nothing, while no provider is registered", () => {
    expect(tracingActive()).toBe(false);
    expect(traceHeaders()).toBeUndefined();
    expect(trace.getSpanContext(contextFromHeaders(undefined))).toBeUndefined();
  });

  it("carries a span's context to the other side, whatever the case of the header's name", async () => {
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    expect(tracingActive()).toBe(true);
    const sent = await inSpan("asking", { kind: SpanKind.CLIENT }, async (span) => ({
      headers: traceHeaders(),
      context: span.spanContext(),
    }));
    expect(sent.headers?.get("traceparent")).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const received = trace.getSpanContext(contextFromHeaders(sent.headers));
    expect(received).toMatchObject({ traceId: sent.context.traceId, spanId: sent.context.spanId, isRemote: true });

    const shouted = headers();
    shouted.set("Traceparent", sent.headers!.get("traceparent"));
    shouted.set("Nats-Msg-Id", "kept-out");
    expect(trace.getSpanContext(contextFromHeaders(shouted))?.spanId).toBe(sent.context.spanId);
    const copied = copyTraceHeaders(shouted);
    expect(copied?.keys()).toEqual(["traceparent"]);
    expect(copyTraceHeaders(headers())).toBeUndefined();
    expect(context.active()).toBe(ROOT_CONTEXT);
  });
});

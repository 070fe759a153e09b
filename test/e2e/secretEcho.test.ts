/**
 * A provider that echoes the API key in its errors, as several
 * OpenAI-compatible servers and proxies do: the real `openai` client in a
 * worker and a runner (processes) gets `Incorrect API key provided: <key>`
 * for every chat and embeddings call. The key must be nowhere that message
 * goes: the turn's stored events, the processes' logs (at debug level), the
 * spans they export, and the gateway's reply.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { REDACTED } from "../../src/config/secrets.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { freePort } from "../../src/nats/server.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { turnLog } from "../helpers/turns.ts";
import { eventually } from "../helpers/wait.ts";
import { useOtlpReceiver } from "../telemetry/otlpReceiver.ts";

const KEY = `sk-echo-${randomUUID()}`;
/** What the server's error says before it quotes the key: where it reaches, the key would have. */
const ECHOED = "Incorrect API key provided:";

const nats = useNatsServer();
const receiver = useOtlpReceiver();
let model: OpenAIServer;
let client: ConclaveClient;
let gatewayUrl: string;
const started: Logged[] = [];

/** A `conclave` process whose stdout and stderr are kept (the suite's spawner lets them through). */
interface Logged {
  name: string;
  child: ChildProcess;
  output: string[];
}

/** The test process's environment without any variable Conclave reads, so only the test's count. */
function environment(extra: Record<string, string>): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(([name]) => !/^(CONCLAVE_|OTEL_|OPENAI_|NATS_)/.test(name));
  return {
    ...Object.fromEntries(kept),
    CONCLAVE_NATS_URL: nats.url,
    CONCLAVE_LLM_BASE_URL: model.url,
    CONCLAVE_LLM_API_KEY: KEY,
    CONCLAVE_LLM_MODEL: "echo-model",
    CONCLAVE_LLM_MAX_RETRIES: "0",
    CONCLAVE_EMBEDDING_MODEL: "echo-embeddings",
    CONCLAVE_LOG: "debug",
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: "50",
    ...extra,
  };
}

/** Starts `conclave <args>` and resolves once it reports ready over IPC. */
function spawnLogged(name: string, args: string[], extra: Record<string, string> = {}): Promise<Logged> {
  const child = spawn(process.execPath, [CONCLAVE_BIN, ...args], {
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    env: environment({ OTEL_SERVICE_NAME: `echo-${name}`, ...extra }),
  });
  const logged: Logged = { name, child, output: [] };
  started.push(logged);
  child.stdout?.on("data", (chunk: Buffer) => logged.output.push(chunk.toString("utf8")));
  child.stderr?.on("data", (chunk: Buffer) => logged.output.push(chunk.toString("utf8")));
  return new Promise((resolve, reject) => {
    child.on("message", (message: { type?: string }) => {
      if (message?.type === "ready") resolve(logged);
    });
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}): ${logged.output.join("")}`)));
  });
}

async function stop(process: Logged): Promise<void> {
  if (process.child.exitCode !== null || process.child.signalCode !== null) return;
  const exited = new Promise<void>((done) => process.child.once("exit", () => done()));
  process.child.kill("SIGTERM");
  const killer = setTimeout(() => process.child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(killer);
}

let events: EngineEvent[] = [];

beforeAll(async () => {
  model = await startOpenAIServer(() => ({ status: 401, echoAuthorization: true }), {
    embeddings: () => ({ status: 401, echoAuthorization: true }),
  });
  await spawnLogged("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
  await spawnLogged("runner", ["runner"]);
  const port = await freePort();
  await spawnLogged("gateway", ["serve", "--port", String(port)]);
  gatewayUrl = `http://127.0.0.1:${port}`;
  const nc = await nats.connect("client");
  client = await connect({ nc });
  const ack = await submitTurn(nc, "echo", { text: "What should I plan for tomorrow?" });
  await watchTurn(nc, ack, () => {}, 60_000).catch(() => undefined);
  events = await turnLog(client, ack.session_id, ack.turn_id);
}, 120_000);

afterAll(async () => {
  await client?.close();
  // Stopped in reverse: the gateway and runner before the worker they call.
  for (const process of started.reverse()) await stop(process);
  await model?.stop();
});

describe("a provider that echoes the API key in its errors", () => {
  it("was sent the key, and answered every call with it", () => {
    expect(model.requests.length).toBeGreaterThan(0);
  });

  it("leaves the key out of the turn's stored events, which still carry the error", () => {
    const log = JSON.stringify(events);
    expect(events.some((event) => event.kind === "AGENT_FAILED" || event.kind === "STAGE_WARNING")).toBe(true);
    expect(log).toContain(ECHOED);
    expect(log).toContain(REDACTED);
    expect(log).not.toContain(KEY);
  });

  it("leaves the key out of the runner's and the worker's logs", () => {
    const logs = started.filter(({ name }) => name !== "gateway").map(({ output }) => output.join(""));
    expect(logs.join("\n")).toContain(ECHOED);
    for (const log of logs) expect(log).not.toContain(KEY);
  });

  it("leaves the key out of every exported span, failed ones included", async () => {
    const bodies = await eventually(
      async () => receiver.bodies.join("\n"),
      (text) => text.includes(ECHOED),
      { timeoutMs: 20_000, everyMs: 100 },
    );
    expect(bodies).toContain(REDACTED);
    expect(bodies).not.toContain(KEY);
  });

  it("leaves the key out of the gateway's reply to a turn, and its log", async () => {
    const response = await fetch(`${gatewayUrl}/ag-ui`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        threadId: "echo-gateway",
        runId: "echo-gateway-run",
        state: {},
        messages: [{ id: "u1", role: "user", content: "And the day after?" }],
        tools: [],
        context: [],
        forwardedProps: {},
      }),
    });
    const reply = await response.text();
    expect(reply).toMatch(/"type":"(RUN_FINISHED|RUN_ERROR)"/);
    expect(reply).not.toContain(KEY);
    const gateway = started.find(({ name }) => name === "gateway");
    expect(gateway?.output.join("")).not.toContain(KEY);
  });
});

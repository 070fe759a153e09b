import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { freePort } from "../../src/nats/server.ts";
import { Runner, type RunnerOptions } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "./nats.ts";
import { useConclaveProcesses } from "./processes.ts";

/**
 * A runner and one worker hosting every agent and core service, in this test
 * file's process, against the file's nats-server; stopped after its tests.
 */
export function useInProcessStack(nats: ReturnType<typeof useNatsServer>, options: RunnerOptions = {}) {
  let runner: Runner | undefined;
  let worker: WorkerHandle | undefined;
  beforeAll(async () => {
    worker = await startWorker({
      nc: await nats.connect("worker"),
      agents: builtinAgents("*"),
      services: [...CORE_SERVICES],
    });
    runner = await Runner.start(await nats.connect("runner"), options);
  });
  afterAll(async () => {
    await runner?.stop();
    await worker?.stop();
  });
  return {
    get runner(): Runner {
      if (!runner) throw new Error("the stack is not started yet");
      return runner;
    },
  };
}

/** What `useGatewayStack` starts: the recipes `conclave serve` offers as tools (files of `recipes/`), if any. */
export interface GatewayStackOptions {
  recipes?: readonly string[];
}

/**
 * A whole stack behind `conclave serve`, all processes, against this test
 * file's own nats-server: a worker with the built-in agents and services,
 * one with the recipe agents (when the gateway serves recipes), one with the
 * slow agent (to cancel or leave a turn while it runs), a runner, and the
 * gateway on a free port; with a Conclave client and an observer connection.
 * Everything stops after the file's tests.
 */
export function useGatewayStack(options: GatewayStackOptions = {}) {
  const nats = useNatsServer();
  const processes = useConclaveProcesses(() => nats.url);
  let started:
    | { conclave: ConclaveClient; observer: NatsConnection; gateway: ConclaveProcess; baseUrl: string }
    | undefined;
  beforeAll(async () => {
    const recipes = options.recipes ?? [];
    const workers = [
      processes.spawn("builtins", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
      processes.spawn("slow", ["worker", "--agents", "./test/fixtures/cancel/slowAgent.ts"]),
    ];
    const serve = ["serve"];
    if (recipes.length > 0) {
      const dir = mkdtempSync(join(tmpdir(), "conclave-gateway-recipes-"));
      for (const file of recipes) copyFileSync(join("recipes", file), join(dir, file));
      workers.push(processes.spawn("recipe-agents", ["worker", "--agents", "./agents/recipes/index.ts"]));
      serve.push("--recipes", dir);
    }
    await Promise.all(workers);
    await processes.spawn("runner", ["runner"]);
    const port = await freePort();
    const gateway = await processes.spawn("gateway", [...serve, "--port", String(port)]);
    started = {
      conclave: await connect({ nc: await nats.connect("client") }),
      observer: await nats.connect("observer"),
      gateway,
      baseUrl: `http://127.0.0.1:${port}`,
    };
  });
  const ready = () => {
    if (!started) throw new Error("the gateway stack is not started yet");
    return started;
  };
  return {
    nats,
    /** More `conclave` processes for a test (stopped after the file's tests too). */
    processes,
    get conclave(): ConclaveClient {
      return ready().conclave;
    },
    /** A connection as the `observer` role: the inspector's subjects. */
    get observer(): NatsConnection {
      return ready().observer;
    },
    get gateway(): ConclaveProcess {
      return ready().gateway;
    },
    /** The gateway's address, `http://127.0.0.1:<port>`. */
    get baseUrl(): string {
      return ready().baseUrl;
    },
    /** Resolves when the slow agent reports it runs in the turn; call it before the turn is submitted. */
    async slowAgentStarted(sessionId: string, turnId: number): Promise<{ seen: Promise<void> }> {
      const { observer } = ready();
      const sub = observer.subscribe(`conclave.inspect.slow.${sessionId}.${turnId}.started`, { max: 1 });
      await observer.flush();
      const seen = (async () => {
        for await (const _ of sub) return;
        throw new Error("the slow agent never started");
      })();
      return { seen };
    },
  };
}

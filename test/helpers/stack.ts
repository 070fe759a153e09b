import { afterAll, beforeAll } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { Runner, type RunnerOptions } from "../../src/runtime/runner/runner.ts";
import { CORE_SERVICES, startWorker, type WorkerHandle } from "../../src/workers/startWorker.ts";
import type { useNatsServer } from "./nats.ts";

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

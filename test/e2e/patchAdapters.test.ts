/**
 * Patch adapters of a user's own, given to `startWorker`: the memory service dispatches the
 * procedural patches a turn teaches to them by label, records their results on the procedure's
 * node, and an adapter of the user's with the built-in's label replaces it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { connect } from "../../src/client/client.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import { definePatchAdapter, type ProceduralPatch } from "../../src/memory/procedural/index.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
const seen: { patch: ProceduralPatch; turn_id: number }[] = [];
let worker: WorkerHandle;
let runner: Runner;

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
    patchAdapters: [
      definePatchAdapter({
        label: "style.language",
        name: "acme.translator",
        apply: (patch, context) => {
          seen.push({ patch, turn_id: context.turn_id });
          return { status: "applied", detail: `translating to ${String(patch.data.value)}` };
        },
      }),
      // Replaces the built-in `style` adapter for every other style.* label.
      definePatchAdapter({ label: "style", name: "acme.style", apply: () => ({ status: "noted", detail: "later" }) }),
    ],
  });
  runner = await Runner.start(await nats.connect("runner"));
});
afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
});

describe("patch adapters given to startWorker", () => {
  it("get the patches of their label, and their results are recorded on the procedure's node", async () => {
    const client = await connect({ nc: await nats.connect("client") });
    await client.submit("patches-1", "Please answer in Spanish, and keep your answers short.").result;
    expect(seen).toEqual([
      {
        patch: expect.objectContaining({ label: "style.language", data: { value: "spanish" } }),
        turn_id: 1,
      },
    ]);
    const graph = await openMemoryGraph({ nc: await nats.connect("worker") });
    try {
      const language = await graph.node("patches-1", "procedure.style.language");
      const length = await graph.node("patches-1", "procedure.style.length");
      expect(language?.data.results).toEqual([
        { adapter: "acme.translator", status: "applied", detail: "translating to spanish", turn_id: 1 },
      ]);
      expect(length?.data.results).toEqual([{ adapter: "acme.style", status: "noted", detail: "later", turn_id: 1 }]);
    } finally {
      await graph.close();
    }
  });
});

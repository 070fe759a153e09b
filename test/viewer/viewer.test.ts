import { readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { allStates, machineGraph } from "../../src/graph/machineGraph.ts";
import { launchChromium } from "../helpers/browser.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * The offline viewer end to end: a runner and workers with inspection on,
 * each its own process, the viewer, and Debian's chromium driving the page
 * while a turn runs.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let browser: Browser;
let page: Page;
let runner: ConclaveProcess;
let agents: ConclaveProcess;
let core: ConclaveProcess;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });

interface Recorded {
  highlighted: string[];
  lit: string[];
  taken: string[];
  sessions: Record<string, string[]>;
}
const recorded = () => page.evaluate(() => (globalThis as unknown as { conclaveViewer: Recorded }).conclaveViewer);
/** `data-*` attributes of matching elements (the test has no DOM types). */
const dataOf = (selector: string, name: string) =>
  page
    .locator(selector)
    .evaluateAll(
      (nodes, key) => nodes.map((node) => (node as unknown as { dataset: Record<string, string> }).dataset[key]),
      name,
    );

beforeAll(async () => {
  const launching = launchChromium();
  [agents, core, runner] = await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*", "--inspect"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory", "--inspect"]),
    processes.spawn("runner", ["runner", "--inspect"]),
  ]);
  const port = await freePort();
  await processes.spawn("viewer", ["viewer", "--port", String(port)]);
  browser = await launching;
  page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForSelector("#status.live", { timeout: 10_000 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe("conclave viewer", () => {
  it("draws every machine's states from its definition", async () => {
    for (const [key, machine] of Object.entries(MACHINES)) {
      const states = allStates(machineGraph(machine).root).filter((state) => state.path.length > 0);
      const drawn = await dataOf(`section[data-machine="${key}"] .state`, "statePath");
      expect(drawn.sort(), key).toEqual(states.map((state) => state.path.join(".")).sort());
    }
    await expect(
      page.locator('section[data-machine="turn"] [data-state-path="agents"] .transitions').first().textContent(),
    ).resolves.toContain("after stageTimeout");
  });

  it("lights up a turn's states stage by stage across processes, and lists its events", async () => {
    // Bad input on both feeds first, from a role allowed to publish there: the viewer must shrug it off.
    const worker = await nats.connect("worker");
    worker.publish("conclave.inspect.bogus", "not json");
    worker.publish("conclave.inspect.bogus", JSON.stringify({ v: 1, kind: "snapshot" }));
    await worker.flush();

    const client = await nats.connect("client");
    // Waited on from before the turn starts: a state of the turn's diagram lit while the turn runs.
    const litDuringTurn = page.waitForSelector('section[data-machine="turn"] svg .dnode.active', { timeout: 20_000 });
    const ack = await submitTurn(client, "viewer", {
      text: "I'm stressed about my deadline tomorrow, can you help me plan?",
    });
    const watching = watchTurn(client, ack, () => {}, 20_000);
    const lit = await litDuringTurn;
    expect(await lit.getAttribute("data-state-path")).toBeTruthy();
    await page.screenshot({ path: join(tmpdir(), `conclave-viewer-midturn-${process.pid}.png`), fullPage: true });
    await watching;

    const turn = `[data-turn="viewer/${ack.turn_id}"]`;
    await page.waitForSelector(`${turn} [data-kind="TURN_COMPLETED"]`, { timeout: 10_000 });
    await page.waitForSelector('section[data-machine="turn"] .trail li[data-leaves="completed"]', { timeout: 10_000 });

    const { highlighted, sessions } = await recorded();
    const turnStates = highlighted.filter((entry) => entry.startsWith("turn:")).map((entry) => entry.slice(5));
    expect(turnStates).toContain("agents");
    expect(turnStates).toContain("council");
    const order = [
      "sensing_fast",
      "context",
      "agents",
      "deliberation",
      "council",
      "critics",
      "memory_commit",
      "completed",
    ];
    const firstSeen = order.map((stage) => turnStates.indexOf(stage));
    expect(
      firstSeen.every((index) => index >= 0),
      `highlighted: ${turnStates.join(", ")}`,
    ).toBe(true);
    expect([...firstSeen].sort((a, b) => a - b)).toEqual(firstSeen);
    expect(turnStates).toContain("agents.wave");
    // The diagram too: its boxes lit as the turn went, the transition just taken drawn lit, the final state marked.
    const { lit: litStates, taken } = await recorded();
    expect(litStates).toEqual(expect.arrayContaining(["turn:agents", "turn:council", "turn:agents.wave"]));
    expect(taken.filter((entry) => entry.startsWith("turn:")).length).toBeGreaterThan(0);
    await page.waitForSelector('section[data-machine="turn"] svg .dnode.last[data-state-path="completed"]', {
      timeout: 10_000,
    });
    await expect(page.locator('section[data-machine="turn"] svg .dedge.taken').count()).resolves.toBeGreaterThan(0);

    // The page's own record of the turn actor's path, stage by stage.
    const trail = await dataOf('section[data-machine="turn"] .trail li', "leaves");
    expect(trail.some((leaves) => leaves?.startsWith("agents."))).toBe(true);
    expect(trail.some((leaves) => leaves?.startsWith("council."))).toBe(true);
    expect(trail.at(-1)).toBe("completed");

    // The turn ran in the runner and its agents in a worker: both streamed, with process-unique ids.
    expect(sessions.turn?.every((id) => id.startsWith(`runner:${runner.child.pid}:x:`))).toBe(true);
    expect(sessions.agent?.length).toBeGreaterThan(0);
    expect(sessions.agent?.every((id) => id.startsWith(`worker:${agents.child.pid}:x:`))).toBe(true);
    expect(highlighted).toContain("agent:thinking");
    const shown = await page.locator("#processes .process").allTextContents();
    for (const p of [runner, agents, core]) expect(shown.join(" ")).toContain(`:${p.child.pid}`);

    const kinds = await dataOf(`${turn} .event`, "kind");
    expect(kinds[0]).toBe("TURN_STARTED");
    expect(kinds).toContain("TURN_STAGE_CHANGED");
    expect(kinds.at(-1)).toBe("TURN_COMPLETED");

    const screenshot = join(tmpdir(), `conclave-viewer-${process.pid}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    const png = readFileSync(screenshot);
    expect(statSync(screenshot).size).toBeGreaterThan(10_000);
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });
});

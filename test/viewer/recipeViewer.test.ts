import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileRecipe } from "../../machines/recipe/index.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { allStates, machineGraph } from "../../src/graph/machineGraph.ts";
import { freePort } from "../../src/nats/server.ts";
import { loadRecipe, parseRecipeText } from "../../src/recipes/load.ts";
import { launchChromium } from "../helpers/browser.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * The viewer draws the recipes it sees running: a runner with inspection on,
 * a worker hosting the shipped recipes' agents, the viewer, and Chromium on
 * its page while recipes/approval.yaml runs to its human node and suspends,
 * then is answered.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let browser: Browser;
let client: ConclaveClient;
let viewerUrl: string;

const approval = parseRecipeText(readFileSync("recipes/approval.yaml", "utf8")) as JsonObject;
const SECTION = 'section[data-recipe="approval"]';

interface Recorded {
  highlighted: string[];
  waiting: string[];
  recipes: string[];
  sessions: Record<string, string[]>;
}
const recorded = (page: Page) =>
  page.evaluate(() => (globalThis as unknown as { conclaveViewer: Recorded }).conclaveViewer);
const dataOf = (page: Page, selector: string, name: string) =>
  page
    .locator(selector)
    .evaluateAll(
      (nodes, key) => nodes.map((node) => (node as unknown as { dataset: Record<string, string> }).dataset[key]),
      name,
    );

async function startViewer(name: string): Promise<string> {
  const port = await freePort();
  await processes.spawn(name, ["viewer", "--port", String(port)]);
  return `http://127.0.0.1:${port}/`;
}

async function openPage(url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await page.goto(url);
  await page.waitForSelector("#status.live", { timeout: 10_000 });
  return page;
}

beforeAll(async () => {
  const launching = launchChromium();
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]),
    processes.spawn("runner", ["runner", "--inspect"]),
  ]);
  viewerUrl = await startViewer("viewer");
  browser = await launching;
  client = await connect({ nc: await nats.connect("client") });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await client?.close();
});

describe("conclave viewer and recipes", () => {
  let turnId: number;

  it("draws a running recipe's statechart, titled with its name, and marks the human node it suspends at", async () => {
    const page = await openPage(viewerUrl);
    expect(await page.locator("section.recipe").count()).toBe(0);

    const result = await client.run("viewer-recipe", approval, { inputs: { topic: "x" } });
    expect(result).toMatchObject({ status: "suspended", node: "approve" });
    turnId = result.turnId;

    // The page learns of the recipe from the server and draws it: every state of its compiled machine.
    // Marked on the diagram (SVG) and on its card alike.
    const approve = page.locator(`${SECTION} .state[data-state-path="run.approve"]`);
    await page.locator(`${SECTION} svg .dnode[data-state-path="run.approve"].waiting`).waitFor({ timeout: 15_000 });
    await page
      .locator(`${SECTION} .state[data-state-path="run.approve"].waiting`)
      .waitFor({ state: "attached", timeout: 5_000 });
    await page.locator(`${SECTION} svg .dnode[data-state-path="suspended"].last`).waitFor({ timeout: 5_000 });
    await expect(page.locator(`${SECTION} > h2`).textContent()).resolves.toMatch(/^recipe approval/);
    const graph = machineGraph(compileRecipe(loadRecipe(approval)));
    const states = allStates(graph.root)
      .filter((state) => state.path.length > 0)
      .map((state) => state.path.join("."));
    expect((await dataOf(page, `${SECTION} .state`, "statePath")).sort()).toEqual(states.sort());
    expect(await page.locator(`${SECTION} svg .dedge`).count()).toBe(graph.edges.length);
    await expect(approve.locator(":scope > .state-head .node-kind").textContent()).resolves.toBe("human");

    // Its actor's path, as the page saw it: the draft node while the writer worked, then suspended.
    const { highlighted, waiting, recipes, sessions } = await recorded(page);
    expect(recipes).toHaveLength(1);
    const key = recipes[0]!;
    expect(key).toMatch(/^recipe:approval@/);
    const path = highlighted.filter((entry) => entry.startsWith(`${key}:`)).map((entry) => entry.slice(key.length + 1));
    expect(path).toEqual(expect.arrayContaining(["run", "run.draft", "run.draft.working", "suspended"]));
    expect(path.indexOf("run.draft")).toBeLessThan(path.indexOf("suspended"));
    expect(waiting).toEqual([`${key}:run.approve`]);
    expect(sessions[key]).toHaveLength(1);
    const trail = await dataOf(page, `${SECTION} .trail li`, "leaves");
    expect(trail).toContain("run.draft.working");
    expect(trail.at(-1)).toBe("suspended");

    // The run's events, recipe ones summarised; the document itself is not sent to the page.
    const turn = `[data-turn="viewer-recipe/${turnId}"]`;
    await page.locator(`${turn} [data-kind="TURN_SUSPENDED"]`).waitFor({ timeout: 10_000 });
    await expect(page.locator(`${turn} [data-kind="RECIPE_STARTED"] .summary`).textContent()).resolves.toBe(
      "approval (workflow)",
    );
    await expect(page.locator(`${turn} [data-kind="TURN_SUSPENDED"] .summary`).textContent()).resolves.toBe(
      "waits at approve",
    );
    const served = (await (await fetch(new URL("recipes.json", viewerUrl))).json()) as { key: string }[];
    expect(served.map((diagram) => diagram.key)).toEqual([key]);

    // A page opened now is brought up to date: the diagram and the mark.
    const late = await openPage(viewerUrl);
    await late.locator(`${SECTION} svg .dnode[data-state-path="run.approve"].waiting`).waitFor({ timeout: 10_000 });
    await late.close();
    await page.close();
  });

  it("draws a resumed run on a viewer started after the run began (its recipe read from the event log)", async () => {
    expect(turnId).toBeGreaterThan(0);
    const page = await openPage(await startViewer("viewer-late"));
    const done = client.resume("viewer-recipe", turnId, { input: { approved: true }, userId: "ana", role: "editor" });
    await page.locator(`${SECTION} .trail li[data-leaves="completed"]`).waitFor({ timeout: 20_000 });
    await expect(done).resolves.toMatchObject({ status: "completed", outcome: { status: "Complete" } });
    const { highlighted, recipes } = await recorded(page);
    const key = recipes[0]!;
    const path = highlighted.filter((entry) => entry.startsWith(`${key}:`)).map((entry) => entry.slice(key.length + 1));
    expect(path).toEqual(expect.arrayContaining(["run.publish", "completed"]));
    expect(path).not.toContain("run.archive");
    // Answered: no node waits any more.
    expect(await page.locator(`${SECTION} .waiting`).count()).toBe(0);
    await page.close();
  });
});

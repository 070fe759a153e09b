import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import { drawsRootBox } from "../../src/graph/containers.ts";
import { allStates, machineGraph } from "../../src/graph/machineGraph.ts";
import { freePort } from "../../src/nats/server.ts";
import { launchChromium } from "../helpers/browser.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * The viewer's diagrams, in Chromium: each machine laid out by ELK (served by
 * the viewer from node_modules, nothing fetched from elsewhere) and drawn as
 * SVG, checked against the graph export. The live lighting during a turn is
 * checked in viewer.test.ts.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let browser: Browser;
let page: Page;
let viewerUrl: string;
const requested: string[] = [];

const dataOf = (selector: string, name: string) =>
  page
    .locator(selector)
    .evaluateAll(
      (nodes, key) => nodes.map((node) => (node as unknown as { dataset: Record<string, string> }).dataset[key]),
      name,
    );

beforeAll(async () => {
  const launching = launchChromium();
  const port = await freePort();
  await processes.spawn("viewer", ["viewer", "--port", String(port)]);
  viewerUrl = `http://127.0.0.1:${port}/`;
  browser = await launching;
  page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  page.on("request", (request) => requested.push(request.url()));
  await page.goto(viewerUrl);
  await page.waitForSelector("#status.live", { timeout: 10_000 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe("conclave viewer diagrams", () => {
  it("draws each machine as a laid-out SVG diagram: a box per state, one arrow and label per transition", async () => {
    for (const [key, machine] of Object.entries(MACHINES)) {
      const graph = machineGraph(machine);
      const section = `section[data-machine="${key}"]`;
      await page.waitForSelector(`${section}[data-diagram="drawn"]`, { timeout: 20_000 });
      // The root is a box too when it has transitions of its own or is parallel, as in the graph export.
      const states = allStates(graph.root).filter((state) => state.path.length > 0 || drawsRootBox(graph));
      const boxes = await dataOf(`${section} svg .dnode`, "statePath");
      expect(boxes.sort(), key).toEqual(states.map((state) => state.path.join(".")).sort());
      const edges = await page.locator(`${section} svg .dedge`).evaluateAll((groups) =>
        groups.map((group) => {
          const g = group as unknown as {
            dataset: Record<string, string>;
            querySelector(s: string): { getAttribute(name: string): string | null; textContent: string } | null;
          };
          const line = g.querySelector("path.line");
          return {
            edge: `${g.dataset.source} -> ${g.dataset.target}: ${g.dataset.label}`,
            drawn: (line?.getAttribute("d") ?? "").startsWith("M") && !!line?.getAttribute("marker-end"),
            label: g.querySelector("text.label")?.textContent,
          };
        }),
      );
      const expected = graph.edges.map((edge) => `${edge.source} -> ${edge.target}: ${edge.label}`);
      expect(edges.length, key).toBe(graph.edges.length);
      expect(edges.map((edge) => edge.edge).sort(), key).toEqual(expected.sort());
      expect(
        edges.filter((edge) => !edge.drawn || edge.label !== edge.edge.split(": ").slice(1).join(": ")),
        key,
      ).toEqual([]);
    }
    // Compound states nest their children's boxes.
    await expect(
      page.locator('section[data-machine="turn"] svg .dnode[data-state-path="agents"] > .dnode').count(),
    ).resolves.toBeGreaterThan(0);
  });

  it("lays out with the elkjs bundle the viewer serves itself: the page asks nothing of any other host", async () => {
    const elk = await fetch(`${viewerUrl}elk.js`);
    expect(elk.status).toBe(200);
    expect(elk.headers.get("content-type")).toContain("text/javascript");
    expect(await elk.text()).toContain("ELK");
    expect(requested).toContain(`${viewerUrl}elk.js`);
    expect(requested.filter((url) => !url.startsWith(viewerUrl))).toEqual([]);
    await page.screenshot({ path: join(tmpdir(), `conclave-viewer-diagrams-${process.pid}.png`), fullPage: true });
  });

  it("keeps the cards as a detail view below each diagram", async () => {
    const details = page.locator('section[data-machine="turn"] details.cards');
    await expect(details.evaluate((node) => (node as unknown as { open: boolean }).open)).resolves.toBe(false);
    await details.locator("summary").click();
    await expect(
      page.locator('section[data-machine="turn"] details.cards [data-state-path="agents"]').first().isVisible(),
    ).resolves.toBe(true);
  });
});

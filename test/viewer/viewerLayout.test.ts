/**
 * The viewer's page as a user sees it, in Chromium at a few window sizes, with a
 * turn's events in the event log (the list full): every diagram fits
 * its box (nothing clipped, nothing to scroll), the conversation panel sits
 * under the event list instead of over it, and the links of the turn shown lead
 * to the conversation, the machines, the turn's event log and its traces (or say
 * "tracing off"). Screenshots go to the test's temp dir, their paths printed.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { freePort } from "../../src/nats/server.ts";
import { launchChromium } from "../helpers/browser.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const TRACES =
  'http://127.0.0.1:16686/search?service=conclave-runner&tags={"conclave.session_id":"{session}","conclave.turn_id":"{turn}"}';
const shots = mkdtempSync(join(tmpdir(), "conclave-viewer-layout-"));
let browser: Browser;
let traced: string;
let untraced: string;
const turnId = 1;

beforeAll(async () => {
  const launching = launchChromium();
  const [tracedPort, untracedPort] = [await freePort(), await freePort()];
  await Promise.all([
    processes.spawn("viewer", ["viewer", "--port", String(tracedPort), "--traces-url", TRACES]),
    processes.spawn("viewer-untraced", ["viewer", "--port", String(untracedPort)]),
  ]);
  traced = `http://127.0.0.1:${tracedPort}/`;
  untraced = `http://127.0.0.1:${untracedPort}/`;
  // A turn's events, written to the event log as a runner writes them: enough to fill the list.
  const nc = await nats.connect("runner");
  const streams = await ensureEventStreams(await jetstreamManager(nc));
  const writer = new EventLogWriter(jetstream(nc), streams);
  writer.append("layout", turnId, { kind: "TURN_STARTED", payload: { user_input: "plan my week", turn_id: turnId } });
  for (let round = 0; round < 6; round++)
    for (const stage of ["ingest", "sensing_fast", "context", "agents", "council", "critics"] as const)
      writer.append("layout", turnId, { kind: "TURN_STAGE_CHANGED", payload: { stage } });
  writer.append("layout", turnId, {
    kind: "TURN_COMPLETED",
    payload: { response: "Here is a plan.", outcome: { status: "Complete" }, usage: usageSummary({}) },
  });
  await writer.finish("layout", turnId);
  browser = await launching;
}, 90_000);

afterAll(async () => {
  await browser?.close();
});

/** A page of `url`, the conversation panel open, the turn listed and (unless told not to wait) every diagram drawn. */
async function open(url: string, { diagrams = true } = {}): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${url}?gateway=${encodeURIComponent("http://127.0.0.1:1/ag-ui")}`);
  await page.waitForSelector("#status.live", { timeout: 10_000 });
  for (const key of diagrams ? Object.keys(MACHINES) : [])
    await page.waitForSelector(`section[data-machine="${key}"][data-diagram="drawn"]`, { timeout: 30_000 });
  await page.waitForSelector(`[data-turn="layout/${turnId}"] [data-kind="TURN_COMPLETED"]`, { timeout: 10_000 });
  return page;
}

/** The traced viewer's page, opened once (laying every machine out takes Chromium a while): each test sizes it. */
let shared: Promise<Page> | undefined;
const tracedPage = () => {
  shared ??= open(traced);
  return shared;
};

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}
const boxOf = async (page: Page, selector: string): Promise<Box> => {
  const box = await page.locator(selector).first().boundingBox();
  if (!box) throw new Error(`${selector} is not shown`);
  return box;
};
const inside = (inner: Box, outer: Box) =>
  inner.x >= outer.x - 1 &&
  inner.y >= outer.y - 1 &&
  inner.x + inner.width <= outer.x + outer.width + 1 &&
  inner.y + inner.height <= outer.y + outer.height + 1;
const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

describe("the viewer's page at several window sizes", () => {
  for (const [width, height] of [
    [1280, 800],
    [1600, 1000],
    [900, 900],
  ] as const) {
    it(`at ${width}×${height}: each diagram fits its box, the conversation panel is beside the event list, not over it`, async () => {
      const page = await tracedPage();
      await page.setViewportSize({ width, height });
      const shot = join(shots, `viewer-${width}x${height}.png`);
      await page.screenshot({ path: shot });
      console.log(`viewer screenshot: ${shot}`);
      for (const key of Object.keys(MACHINES)) {
        const graph = `section[data-machine="${key}"] .graph`;
        const [svg, box, main] = [
          await boxOf(page, `${graph} > svg.statechart`),
          await boxOf(page, graph),
          await boxOf(page, "main"),
        ];
        expect(inside(svg, box), `${key}: svg ${JSON.stringify(svg)} in ${JSON.stringify(box)}`).toBe(true);
        expect(inside({ ...box, y: main.y, height: 0 }, { ...main, height: 1 }), `${key} within main`).toBe(true);
        // Nothing left to scroll to: the whole diagram is in view in its box.
        const scroll = await page.locator(graph).evaluate((node) => {
          const n = node as unknown as {
            scrollWidth: number;
            clientWidth: number;
            scrollHeight: number;
            clientHeight: number;
          };
          return { x: n.scrollWidth - n.clientWidth, y: n.scrollHeight - n.clientHeight };
        });
        expect(scroll, key).toEqual({ x: 0, y: 0 });
        expect(svg.height, `${key} no taller than the window`).toBeLessThanOrEqual(height);
        expect(svg.x + svg.width, `${key} within the window`).toBeLessThanOrEqual(width);
      }
      const [panel, events, links] = [
        await boxOf(page, "#conv-panel"),
        await boxOf(page, "#events"),
        await boxOf(page, "#turn-links"),
      ];
      expect(await page.locator("#conv-panel").evaluate((node) => (node as unknown as { open: boolean }).open)).toBe(
        true,
      );
      expect(overlap(panel, events), `panel ${JSON.stringify(panel)} over events ${JSON.stringify(events)}`).toBe(
        false,
      );
      expect(overlap(panel, links)).toBe(false);
      expect(overlap(events, links)).toBe(false);
      expect(events.height).toBeGreaterThan(90);
      expect(panel.x + panel.width).toBeLessThanOrEqual(width);
      // The event list is what the user reads: a point in it reaches it, not the panel.
      const hit = await page.evaluate(
        ({ x, y }) =>
          (
            globalThis as unknown as {
              document: { elementFromPoint(x: number, y: number): { closest(s: string): unknown } | null };
            }
          ).document
            .elementFromPoint(x, y)
            ?.closest("#events") !== null,
        { x: events.x + events.width / 2, y: events.y + events.height - 4 },
      );
      expect(hit).toBe(true);
    }, 90_000);
  }

  it("'actual size' shows a diagram unscaled, scrolling in its box, and 'fit' fits it again", async () => {
    const page = await tracedPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    const graph = 'section[data-machine="turn"] .graph';
    const laidOut = Number(await page.locator(`${graph} > svg`).getAttribute("width"));
    const fitted = await boxOf(page, `${graph} > svg`);
    expect(fitted.width).toBeLessThan(laidOut);
    await page.click(`${graph} .fit-toggle`);
    expect((await boxOf(page, `${graph} > svg`)).width).toBe(laidOut);
    await page.screenshot({ path: join(shots, "viewer-actual-size.png") });
    await page.click(`${graph} .fit-toggle`);
    expect((await boxOf(page, `${graph} > svg`)).width).toBeCloseTo(fitted.width, 0);
  }, 90_000);
});

describe("the links of the turn shown", () => {
  it("link the conversation, the machines, the turn's event log and its traces", async () => {
    const page = await tracedPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    const turn = `turn-layout-${turnId}`;
    expect(await page.textContent("#turn-shown")).toBe(`session layout · turn ${turnId}`);
    expect(await page.getAttribute("#link-machine-turn", "href")).toBe("#machine-turn");
    expect(await page.getAttribute("#link-machine-agent", "href")).toBe("#machine-agent");
    await expect(page.locator("#machine-turn svg.statechart").count()).resolves.toBe(1);
    await expect(page.locator("#machine-agent svg.statechart").count()).resolves.toBe(1);
    expect(await page.getAttribute("#link-events", "href")).toBe(`#${turn}`);
    await expect(page.locator(`#${turn} [data-kind="TURN_COMPLETED"]`).count()).resolves.toBe(1);
    // The turn's whole stored log, read from the tape.
    const logUrl = new URL((await page.getAttribute("#link-log", "href")) ?? "", traced).href;
    const log = (await (await fetch(logUrl)).json()) as { kind: string; turn_id: number }[];
    expect(log[0]?.kind).toBe("TURN_STARTED");
    expect(log.at(-1)?.kind).toBe("TURN_COMPLETED");
    expect(log.every((event) => event.turn_id === turnId)).toBe(true);
    expect(await page.getAttribute("#link-traces", "href")).toBe(
      TRACES.replace("{session}", "layout").replace("{turn}", String(turnId)),
    );
    expect(await page.isVisible("#link-traces")).toBe(true);
    expect(await page.isVisible("#traces-off")).toBe(false);
    // The conversation panel, on the turn's session.
    await page.locator("#conv-panel > summary").click();
    expect(await page.locator("#conv-panel").evaluate((node) => (node as unknown as { open: boolean }).open)).toBe(
      false,
    );
    await page.click("#link-conversation");
    expect(await page.locator("#conv-panel").evaluate((node) => (node as unknown as { open: boolean }).open)).toBe(
      true,
    );
    expect(await page.inputValue("#conv-thread")).toBe("layout");
  }, 90_000);

  it("say 'tracing off' when the viewer has no --traces-url, rather than a dead link", async () => {
    const page = await open(untraced, { diagrams: false });
    expect(await page.isVisible("#traces-off")).toBe(true);
    expect(await page.textContent("#traces-off")).toBe("tracing off");
    expect(await page.isVisible("#link-traces")).toBe(false);
    await page.close();
  }, 90_000);

  it("refuses a log query without a session and a turn, in one line", async () => {
    const response = await fetch(`${traced}log.json?session=no%20such&turn=0`);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe("give ?session=<session id>&turn=<a number from 1>\n");
  });
});

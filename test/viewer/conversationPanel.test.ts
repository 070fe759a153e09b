/**
 * The viewer's conversation panel end to end: a runner and workers, the
 * gateway (`conclave serve`, AG-UI on /ag-ui) and the viewer, each its own
 * process, and Debian's chromium holding a conversation from the viewer's
 * page (another origin than the gateway's).
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { freePort } from "../../src/nats/server.ts";
import { launchChromium } from "../helpers/browser.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let browser: Browser;
let page: Page;
let conclave: ConclaveClient;
let gatewayPort: number;

beforeAll(async () => {
  const launching = launchChromium();
  await processes.spawn("builtins", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner"]);
  gatewayPort = await freePort();
  const viewerPort = await freePort();
  await Promise.all([
    processes.spawn("gateway", ["serve", "--port", String(gatewayPort)]),
    processes.spawn("viewer", ["viewer", "--port", String(viewerPort)]),
  ]);
  conclave = await connect({ nc: await nats.connect("client") });
  browser = await launching;
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const gateway = `http://127.0.0.1:${gatewayPort}/ag-ui`;
  await page.goto(`http://127.0.0.1:${viewerPort}/?gateway=${encodeURIComponent(gateway)}&thread=viewer-chat`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

/** The reply of a turn, as its log stored it. */
async function responseOf(sessionId: string, turnId: number): Promise<string | undefined> {
  for await (const { event } of conclave.events(sessionId, { turnId }))
    if (event.kind === "TURN_COMPLETED") return event.payload.response;
  return undefined;
}

/** Sends `text` from the panel and waits until its run finishes (the form is busy from the click until then). */
async function say(text: string) {
  await page.fill("#conv-text", text);
  await page.click(".conv-send");
  await page.waitForSelector("#conv-form:not(.conv-busy)", { timeout: 30_000 });
}

describe("the viewer's conversation panel", () => {
  it("holds a conversation through the gateway's AG-UI endpoint, from another origin", async () => {
    expect(await page.inputValue("#conv-url")).toBe(`http://127.0.0.1:${gatewayPort}/ag-ui`);
    await say("I'm stressed about my deadline");
    expect(await page.textContent("#conv-stage")).toBe("done");
    expect(await page.locator(".conv-error").count()).toBe(0);
    const replies = await page.locator(".conv-assistant").allTextContents();
    expect(replies).toHaveLength(1);
    expect(replies[0]).toBe(await responseOf("viewer-chat", 1));

    await say("thanks, that helps");
    expect(await page.locator(".conv-user").allTextContents()).toEqual([
      "I'm stressed about my deadline",
      "thanks, that helps",
    ]);
    const second = await page.locator(".conv-assistant").allTextContents();
    expect(second).toHaveLength(2);
    expect(second[1]).toBe(await responseOf("viewer-chat", 2));
    // A turn's status is marked done just after its TURN_COMPLETED is stored, which the reply already waited for.
    await expect
      .poll(async () => (await conclave.turns("viewer-chat")).map((turn) => turn.status))
      .toEqual(["done", "done"]);
  });

  it("says so in one line when the gateway cannot be reached", async () => {
    await page.fill("#conv-url", "http://127.0.0.1:1/ag-ui");
    await say("anyone there?");
    expect(await page.locator(".conv-error").allTextContents()).toEqual([
      expect.stringMatching(/^cannot reach the gateway at http:\/\/127\.0\.0\.1:1\/ag-ui/),
    ]);
  });
});

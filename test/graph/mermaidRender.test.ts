import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { renderMachine } from "../../src/graph/formats.ts";
import { launchChromium } from "../helpers/browser.ts";

/**
 * The diagrams must render, not just look right: each machine's Mermaid is
 * drawn by Mermaid itself (the npm package's browser build) in headless
 * Chromium, offline. A syntax Mermaid rejects fails the test with its message.
 */
const mermaidScript = createRequire(import.meta.url).resolve("mermaid/dist/mermaid.min.js");
let browser: Browser;
let page: Page;

beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage();
  await page.setContent("<!doctype html><html><body></body></html>");
  await page.addScriptTag({ path: mermaidScript });
  await page.evaluate(() => {
    (globalThis as unknown as { mermaid: { initialize(options: object): void } }).mermaid.initialize({
      startOnLoad: false,
    });
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

const render = (id: string, text: string) =>
  page.evaluate(
    async ([diagramId, source]) => {
      const { mermaid } = globalThis as unknown as {
        mermaid: { render(id: string, text: string): Promise<{ svg: string }> };
      };
      try {
        return { svg: (await mermaid.render(diagramId!, source!)).svg, error: null };
      } catch (error) {
        return { svg: "", error: String(error) };
      }
    },
    [id, text],
  );

describe("Mermaid diagrams render", () => {
  it("`conclave graph turn --format mermaid` prints a diagram Mermaid draws, with every stage", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      CONCLAVE_BIN,
      "graph",
      "turn",
      "--format",
      "mermaid",
    ]);
    const { svg, error } = await render("turn", stdout);
    expect(error).toBeNull();
    expect(svg).toMatch(/^<svg/);
    for (const stage of [
      "sensing_fast",
      "agents",
      "deliberation",
      "council",
      "critics",
      "memory_commit",
      "completed",
    ]) {
      expect(svg).toContain(stage);
    }
  });

  it.each(Object.keys(MACHINES).filter((name) => name !== "turn"))("the %s machine's diagram renders", async (name) => {
    const { svg, error } = await render(name, renderMachine(MACHINES[name]!, "mermaid"));
    expect(error).toBeNull();
    expect(svg).toMatch(/^<svg/);
  });

  it("a broken diagram is refused (the check can fail)", async () => {
    const { error } = await render("broken", "stateDiagram-v2\n  a --> : ::: ]]");
    expect(error).not.toBeNull();
  });
});

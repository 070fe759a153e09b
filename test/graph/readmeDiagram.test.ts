import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { currentDiagramBlock, turnDiagramBlock, withDiagramBlock } from "../../src/graph/readmeDiagram.ts";
import { REPO_ROOT } from "../../src/nats/server.ts";

describe("the README's turn diagram", () => {
  it("is the one generated from machines/turn/", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const block = currentDiagramBlock(readme);
    expect(block, "README.md lacks the <!-- turn-diagram:start/end --> markers").not.toBeNull();
    expect(block, "the turn diagram in README.md is stale: run `npm run diagram`").toBe(turnDiagramBlock());
  });

  it("sits in its own section right after 'How it is built', in a mermaid block", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(sections[sections.indexOf("How it is built") + 1]).toBe("The turn statechart");
    expect(currentDiagramBlock(readme)).toMatch(/^\n```mermaid\nstateDiagram-v2\n[\s\S]+\n```\n$/);
  });

  it("is rewritten in place, leaving the rest of the README alone", () => {
    const readme = "intro\n<!-- turn-diagram:start -->\nold\n<!-- turn-diagram:end -->\noutro\n";
    expect(withDiagramBlock(readme, "\nnew\n")).toBe(
      "intro\n<!-- turn-diagram:start -->\nnew\n<!-- turn-diagram:end -->\noutro\n",
    );
    expect(() => withDiagramBlock("no markers", "x")).toThrow(/markers/);
  });
});

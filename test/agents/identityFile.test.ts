/** Identity files, pure and on disk: where an agent's is looked for, when it is read again, and that nothing writes one. */
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { IDENTITY_FILE, IdentityFiles, identitySlug } from "../../src/agents/identityFile.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { planContext } from "../../src/context/planner.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { agentContext } from "../context/contexts.ts";

const write = (dir: string, agent: string, text: string) => {
  mkdirSync(join(dir, agent), { recursive: true });
  writeFileSync(join(dir, agent, IDENTITY_FILE), text);
};

describe("identity files", () => {
  it("look an agent up by its id as a lowercase slug", () => {
    expect(identitySlug("acme.forecaster")).toBe("acme.forecaster");
    expect(identitySlug("Acme Forecaster")).toBe("acme-forecaster");
    expect(identitySlug("--Weird//Name__1--")).toBe("weird-name__1");
  });

  it("read an agent's file with its hash; none when missing or empty; never write one", () => {
    const dir = mkdtempSync(join(tmpdir(), "conclave-identity-"));
    write(dir, "acme.forecaster", "  You are Ada, a careful forecaster. Always give odds.\n");
    write(dir, "acme.quiet", "   \n");
    const files = new IdentityFiles(dir);
    expect(files.read("acme.forecaster")).toEqual({
      text: "You are Ada, a careful forecaster. Always give odds.",
      path: join(dir, "acme.forecaster", IDENTITY_FILE),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(files.read("Acme.Forecaster")?.text).toContain("Ada");
    expect(files.read("acme.quiet")).toBeNull();
    expect(files.read("acme.none")).toBeNull();
    expect(readdirSync(dir).sort()).toEqual(["acme.forecaster", "acme.quiet"]);
  });

  it("read a file again once it changes", () => {
    const dir = mkdtempSync(join(tmpdir(), "conclave-identity-"));
    write(dir, "a.b", "first");
    const files = new IdentityFiles(dir);
    const first = files.read("a.b");
    write(dir, "a.b", "second, and longer");
    const second = files.read("a.b");
    expect(second?.text).toBe("second, and longer");
    expect(second?.sha256).not.toBe(first?.sha256);
  });

  it("put the identity first in the identity_persona zone, cut to the zone's cap", () => {
    const tokenizer = tokenizerFor("gpt-4o");
    const budget = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 };
    const context = agentContext({ identity: "You are Ada.", procedures: ["Keep answers short"] });
    const { report, text } = planContext({ context }, { budget, tokenizer });
    expect(report.zones.identity_persona.kept[0]).toBe("identity");
    expect(text).toMatch(/## Identity and persona\n- You are Ada\.\n- Keep answers short/);
    const long = planContext(
      { context: agentContext({ identity: "Ada is careful. ".repeat(200) }) },
      { budget, tokenizer },
    );
    expect(long.report.truncated).toContain("identity");
    expect(long.report.zones.identity_persona.tokens).toBeLessThanOrEqual(long.report.zones.identity_persona.cap);
  });
});

/**
 * Skills activated for a session (client.skills.activate): the pure parts. The ledgers decide and
 * fold activations (once each, at most 32, ended by a deactivation or a completion), the client's
 * active list names them `client` first, and a worker gives a request's active skills after the
 * routed ones, warning once about one it lacks.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkSkillId } from "../../src/client/skills.ts";
import { AgentRequest } from "../../src/contracts/agent.ts";
import { LedgerEvent, Ledgers } from "../../src/contracts/ledger.ts";
import { decideLedger, LedgerError, type LedgerWrite } from "../../src/ledgers/decide.ts";
import { applyLedgerEvent, emptyLedgers, ledgerDifferences } from "../../src/ledgers/fold.ts";
import { offlineEmbedder } from "../../src/llm/embeddings.ts";
import { WorkerSkills } from "../../src/skills/agentSkills.ts";
import { withSessionActivations } from "../../src/skills/outputs.ts";

const SESSION = "pinned";
const AT = "2026-11-30T00:00:00.000Z";

/** Applies writes in order, each stored at the next stream sequence; the events stored. */
function apply(writes: LedgerWrite[], by = "user", from: Ledgers = emptyLedgers(SESSION)) {
  let state = from;
  const events: LedgerEvent[] = [];
  for (const write of writes) {
    const { event } = decideLedger(state, write, by, AT);
    if (!event) continue;
    expect(LedgerEvent.safeParse(event).success).toBe(true);
    events.push(event);
    state = applyLedgerEvent(state, event, state.through_seq + 10);
  }
  return { state, events };
}

const activate = (skill: string): LedgerWrite => ({ session_id: SESSION, op: "skills.activate", skill });
const deactivate = (skill: string): LedgerWrite => ({ session_id: SESSION, op: "skills.deactivate", skill });
const completed = (skill: string): LedgerWrite => ({ session_id: SESSION, op: "skills.completed", skill });

describe("a session's skill activations in the ledgers", () => {
  it("records an activation once, with who asked, and ends it on deactivation", () => {
    const { state, events } = apply([activate("report"), activate("report"), activate("fx.convert")]);
    expect(events.map((event) => [event.kind, event.by])).toEqual([
      ["SESSION_SKILL_ACTIVATED", "user"],
      ["SESSION_SKILL_ACTIVATED", "user"],
    ]);
    expect(state.skills).toEqual([
      { skill: "report", by: "user", at: AT, seq: 10 },
      { skill: "fx.convert", by: "user", at: AT, seq: 20 },
    ]);
    expect(decideLedger(state, activate("report"), "user", AT).result).toEqual({
      skill: "report",
      active: true,
      changed: false,
    });
    const after = apply([deactivate("report"), deactivate("report")], "user:ana", state);
    expect(after.events).toEqual([
      {
        session_id: SESSION,
        by: "user:ana",
        at: AT,
        kind: "SESSION_SKILL_DEACTIVATED",
        payload: { skill: "report", reason: "requested" },
      },
    ]);
    expect(after.state.skills.map((activation) => activation.skill)).toEqual(["fx.convert"]);
  });

  it("ends an activation when an agent completes the skill, and does nothing for one not activated", () => {
    const { state } = apply([activate("summary")]);
    const done = decideLedger(state, completed("summary"), "agent:acme.writer", AT);
    expect(done.event).toMatchObject({
      kind: "SESSION_SKILL_DEACTIVATED",
      by: "agent:acme.writer",
      payload: { skill: "summary", reason: "completed" },
    });
    // A recipe-declared skill completed: nothing was activated for the session, nothing is stored.
    expect(decideLedger(state, completed("recipe-only"), "agent:acme.writer", AT).event).toBeNull();
  });

  it("refuses a 33rd activation in one line", () => {
    const { state } = apply(Array.from({ length: 32 }, (_, index) => activate(`skill-${index}`)));
    expect(state.skills).toHaveLength(32);
    expect(() => decideLedger(state, activate("one-more"), "user", AT)).toThrow(LedgerError);
    expect(() => decideLedger(state, activate("one-more"), "user", AT)).toThrow(
      /has 32 skills activated, the most it may: deactivate one first/,
    );
  });

  it("names a projection whose activations differ from the log's fold", () => {
    const { state } = apply([activate("report")]);
    const stale = { ...state, skills: [] };
    expect(ledgerDifferences(state, stale)).toContain("activated skills: report ≠ none");
  });

  it("reads ledgers stored before 0.3.0 (no skills) as having none", () => {
    const { skills: _skills, ...older } = emptyLedgers(SESSION);
    const read = Ledgers.parse(older);
    expect(read.skills).toEqual([]);
    expect(decideLedger(read, deactivate("report"), "user", AT).event).toBeNull();
  });
});

describe("what a client and an agent request are given", () => {
  it("lists the session's activations first, as client, once each", () => {
    const active = withSessionActivations(
      [
        { skill: "report", via: "activated", turn_id: 2 },
        { skill: "house-style", via: "routed", turn_id: 3 },
      ],
      [{ skill: "report", by: "user", at: AT, seq: 9 }],
    );
    expect(active).toEqual([
      { skill: "report", via: "client", by: "user", at: AT },
      { skill: "house-style", via: "routed", turn_id: 3 },
    ]);
  });

  it("refuses a bad skill id in one line, and bounds an agent request's active skills", () => {
    expect(() => checkSkillId("Not A Skill")).toThrow(/^bad skill id "Not A Skill": a skill id is lowercase/);
    const parsed = (active_skills: unknown) => AgentRequest.shape.active_skills.safeParse(active_skills).success;
    expect(parsed(["report"])).toBe(true);
    expect(parsed(["Report!"])).toBe(false);
    expect(parsed(Array.from({ length: 65 }, (_, index) => `s${index}`))).toBe(false);
  });
});

describe("a worker given a request's active skills", () => {
  const dir = mkdtempSync(join(tmpdir(), "conclave-session-skills-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "house.yaml"), "id: house\nname: House style\ndescription: d\ninstructions: Be brief.\n");
  writeFileSync(
    join(dir, "report.yaml"),
    "id: report\nname: Report\ndescription: d\nload_strategy: user\ninstructions: Write the report.\n",
  );

  it("loads them after the routed skills, and warns once about one it lacks", async () => {
    const warnings: string[] = [];
    const skills = await WorkerSkills.open({ dir }, offlineEmbedder(256), (message) => warnings.push(message));
    expect((await skills.forMessage("hello")).map((skill) => skill.id)).toEqual(["house"]);
    const given = await skills.forMessage("hello", undefined, ["report", "ghost", "house"]);
    expect(given).toEqual([
      { id: "house", name: "House style", instructions: "Be brief." },
      { id: "report", name: "Report", instructions: "Write the report." },
    ]);
    await skills.forMessage("hello again", undefined, ["ghost"]);
    expect(warnings).toEqual([
      `skills: ghost is not in ${dir}: left out (activated for the session, or declared by its recipe)`,
    ]);
    // The routed selection kept for the message is not changed by a request's active skills.
    expect((await skills.forMessage("hello")).map((skill) => skill.id)).toEqual(["house"]);
  });
});

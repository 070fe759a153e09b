/**
 * The skill lifecycle's pure parts: an output checked against a skill's
 * output_schema, `ctx.skills` activating and completing, the events the
 * runner records for a reply, and the fold of a session's log into outputs,
 * consumed outputs and active skills.
 */
import { describe, expect, it } from "vitest";
import type { AgentReply } from "../../src/contracts/agent.ts";
import type { EngineEvent, EventBody } from "../../src/contracts/events.ts";
import type { AgentSkill, SkillCatalog } from "../../src/skills/agentSkills.ts";
import { agentSkillsView, UnknownSkillError } from "../../src/skills/agentSkillsView.ts";
import { SkillDefinition } from "../../src/skills/definition.ts";
import { checkSkillOutput, MAX_SKILL_OUTPUT_BYTES } from "../../src/skills/outputCheck.ts";
import { consumedOutputs, foldSkills, skillOutputs } from "../../src/skills/outputs.ts";
import { skillRecords } from "../../src/skills/skillRecords.ts";

const summary = SkillDefinition.parse({
  id: "summary",
  name: "Summary",
  description: "",
  instructions: "Summarise.",
  output_schema: {
    type: "object",
    required: ["text", "words"],
    properties: { text: { type: "string" }, words: { type: "integer", minimum: 1 } },
  },
});
const free = SkillDefinition.parse({ id: "free", name: "Free", description: "", instructions: "Anything." });
const report = SkillDefinition.parse({
  id: "report",
  name: "Report",
  description: "",
  instructions: "Report.",
  load_strategy: "user",
  consumes: ["summary", "free"],
});

const catalog: SkillCatalog = {
  definition: (id) => [summary, free, report].find((skill) => skill.id === id),
  ids: () => ["summary", "free", "report"],
  load: async (id) => ({ id, name: id, instructions: `instructions of ${id}` }),
};

describe("checkSkillOutput", () => {
  it("accepts an output its schema accepts, as JSON", () => {
    expect(checkSkillOutput(summary, { text: "hi", words: 1 })).toEqual({
      skill: "summary",
      ok: true,
      output: { text: "hi", words: 1 },
    });
    expect(checkSkillOutput(free, { when: new Date(0) })).toEqual({
      skill: "free",
      ok: true,
      output: { when: "1970-01-01T00:00:00.000Z" },
    });
  });

  it("refuses one its schema rejects, each issue one line naming its field", () => {
    const refused = checkSkillOutput(summary, { text: 5, words: 0 });
    expect(refused.ok).toBe(false);
    expect(refused.output).toBeUndefined();
    expect(refused.issues).toHaveLength(2);
    expect(refused.issues?.[0]).toMatch(/^text: /);
    expect(refused.issues?.[1]).toMatch(/^words: /);
    expect(checkSkillOutput(summary, { text: "x" }).issues?.join()).toMatch(/words/);
  });

  it("refuses what is not JSON, or too big for the log, and a schema that cannot be used", () => {
    expect(checkSkillOutput(free, undefined).issues).toEqual(["the output is not JSON (undefined)"]);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(checkSkillOutput(free, cyclic).issues?.[0]).toMatch(/^the output is not JSON: /);
    expect(checkSkillOutput(free, "x".repeat(MAX_SKILL_OUTPUT_BYTES)).issues?.[0]).toMatch(/bytes as JSON; at most/);
    const broken = SkillDefinition.parse({ ...free, id: "broken", output_schema: { type: "no-such-type" } });
    expect(checkSkillOutput(broken, 1).issues?.[0]).toMatch(/^the skill's output_schema cannot be used: /);
  });
});

describe("ctx.skills", () => {
  const loaded: AgentSkill[] = [{ id: "summary", name: "Summary", instructions: "Summarise." }];

  it("is the loaded skills, and reports what the agent activated and completed", async () => {
    const { skills, report: reported } = agentSkillsView(loaded, catalog);
    expect([...skills]).toEqual(loaded);
    expect(JSON.stringify(skills)).toBe(JSON.stringify(loaded));
    expect(reported()).toEqual({});
    expect(await skills.activate("report")).toEqual({
      id: "report",
      name: "report",
      instructions: "instructions of report",
    });
    expect(await skills.activate("summary")).toBe(loaded[0]);
    expect(skills.complete("summary", { text: "a b", words: 2 }).ok).toBe(true);
    expect(skills.complete("summary", { text: "a b" }).ok).toBe(false);
    expect(reported()).toEqual({
      skills_activated: ["report", "summary"],
      skills_completed: [
        { skill: "summary", ok: true, output: { text: "a b", words: 2 } },
        { skill: "summary", ok: false, issues: [expect.stringMatching(/^words: /)] },
      ],
    });
  });

  it("refuses an unknown skill in one line naming the worker's skills, and every skill on a worker without any", async () => {
    const { skills } = agentSkillsView(loaded, catalog);
    await expect(skills.activate("nope")).rejects.toThrow(
      new UnknownSkillError('no skill "nope" on this worker; its skills are: summary, free, report'),
    );
    expect(() => skills.complete("nope", 1)).toThrow(UnknownSkillError);
    const none = agentSkillsView([], undefined).skills;
    await expect(none.activate("summary")).rejects.toMatchObject({ code: "not_found" });
    expect(() => none.complete("summary", 1)).toThrow(/this worker has no skills directory/);
  });
});

/** A session's log, as the fold reads it: bodies with their turns. */
const log = (...entries: [number, EventBody][]): EngineEvent[] =>
  entries.map(([turn_id, body], seq) => ({ session_id: "s", turn_id, seq, ts_monotonic: seq, ...body }) as EngineEvent);

const reply = (fields: Partial<AgentReply>): AgentReply => ({
  agent_id: "acme.writer",
  contribution: {
    claims: [],
    stance_delta: {},
    confidence: 0.5,
    rationale: "",
  } as unknown as AgentReply["contribution"],
  elapsed_ms: 1,
  worker: "w",
  ...fields,
});

describe("the session's skills, folded from its log", () => {
  const events = log(
    ...skillRecords(
      reply({
        skills_activated: ["report"],
        skills_completed: [
          { skill: "summary", ok: true, output: { text: "one", words: 1 } },
          { skill: "summary", ok: false, issues: ["words: too small"] },
        ],
      }),
    ).map((body): [number, EventBody] => [1, body as EventBody]),
    [2, { kind: "SKILL_COMPLETED", payload: { skill: "free", agent_id: "a", ok: true, output: 7 } }],
    [2, { kind: "SKILL_COMPLETED", payload: { skill: "summary", agent_id: "a", node: "n", ok: true, output: "two" } }],
  );

  it("records activations first, then completions, with the output or the issues", () => {
    expect(events.slice(0, 3).map((event) => [event.kind, event.payload])).toEqual([
      ["SKILL_ACTIVATED", { skill: "report", agent_id: "acme.writer" }],
      ["SKILL_COMPLETED", { skill: "summary", agent_id: "acme.writer", ok: true, output: { text: "one", words: 1 } }],
      ["SKILL_COMPLETED", { skill: "summary", agent_id: "acme.writer", ok: false, issues: ["words: too small"] }],
    ]);
    expect(skillRecords(reply({}))).toEqual([]);
  });

  it("gives a skill's accepted outputs, oldest first, and the refusals apart", () => {
    expect(skillOutputs(events, "summary")).toEqual([
      { skill: "summary", output: { text: "one", words: 1 }, turn_id: 1, agent_id: "acme.writer" },
      { skill: "summary", output: "two", turn_id: 2, agent_id: "a", node: "n" },
    ]);
    expect(skillOutputs(events, "report")).toEqual([]);
    expect(foldSkills(events).refusals).toEqual([
      { skill: "summary", turn_id: 1, agent_id: "acme.writer", issues: ["words: too small"] },
    ]);
  });

  it("gives the outputs of the skills a skill consumes, in its order", () => {
    const consumed = consumedOutputs(events, report.consumes ?? []);
    expect(Object.keys(consumed)).toEqual(["summary", "free"]);
    expect(consumed.summary?.map((entry) => entry.output)).toEqual([{ text: "one", words: 1 }, "two"]);
    expect(consumed.free?.map((entry) => entry.output)).toEqual([7]);
    expect(consumedOutputs(events, [])).toEqual({});
  });

  it("counts a skill active from its activation until a completion, and the latest turn's routed ones", () => {
    const routed = (turn: number, skills: string[]): [number, EventBody] => [
      turn,
      {
        kind: "AGENT_COMPLETED",
        payload: { wave: 0, agent_id: "x", contribution: {}, elapsed_ms: 1, worker: "w", skills },
      } as unknown as EventBody,
    ];
    expect(foldSkills(events).active).toEqual([{ skill: "report", via: "activated", turn_id: 1 }]);
    const more = [...events, ...log(routed(3, ["tone"]), routed(4, ["umbrella", "report"]))];
    expect(foldSkills(more).active).toEqual([
      { skill: "report", via: "activated", turn_id: 1 },
      { skill: "umbrella", via: "routed", turn_id: 4 },
    ]);
    const done = [
      ...more,
      ...log([5, { kind: "SKILL_COMPLETED", payload: { skill: "report", agent_id: "a", ok: true, output: 1 } }]),
    ];
    expect(foldSkills(done).active.map((active) => active.skill)).toEqual(["umbrella", "report"]);
  });
});

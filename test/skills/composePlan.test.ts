/** Compose plans: every skill exists, and every skill one consumes is an earlier step. */
import { describe, expect, it } from "vitest";
import { checkComposePlan, skillsClient } from "../../src/client/skills.ts";
import { validateComposePlan } from "../../src/skills/composePlan.ts";
import { skillsDir } from "./fixtures.ts";

const skills = [
  { id: "fetch" },
  { id: "clean", consumes: ["fetch"] },
  { id: "chart", consumes: ["clean", "fetch"] },
  { id: "report", consumes: ["chart", "notes"] },
];

describe("validateComposePlan", () => {
  it("a plan whose every input comes from an earlier step is valid", () => {
    expect(validateComposePlan(["fetch", "clean", "chart"], skills)).toEqual({ valid: true, problems: [] });
    expect(validateComposePlan([], skills)).toEqual({ valid: true, problems: [] });
  });

  it("names the step, the skill and the missing input of each problem", () => {
    const check = validateComposePlan(["clean", "fetch", "ghost", "report"], skills);
    expect(check.valid).toBe(false);
    expect(check.problems).toEqual([
      {
        step: 0,
        skill: "clean",
        code: "missing_input",
        missing: "fetch",
        message:
          'step 1 ("clean") consumes the output of "fetch", which no earlier step produces: it comes later, at step 2',
      },
      { step: 2, skill: "ghost", code: "unknown_skill", message: 'step 3 ("ghost"): no such skill' },
      {
        step: 3,
        skill: "report",
        code: "missing_input",
        missing: "chart",
        message:
          'step 4 ("report") consumes the output of "chart", which no earlier step produces: no earlier step runs it',
      },
      {
        step: 3,
        skill: "report",
        code: "missing_input",
        missing: "notes",
        message: 'step 4 ("report") consumes the output of "notes", which no earlier step produces: it is not a skill',
      },
    ]);
  });

  it("the client checks a plan against a skills directory, and refuses a plan that is not a list of ids", async () => {
    const dir = skillsDir({
      "fetch.yaml": "id: fetch\nname: Fetch\ndescription: d\ninstructions: get it\n",
      "clean.yaml": "id: clean\nname: Clean\ndescription: d\ninstructions: tidy it\nconsumes: [fetch]\n",
    });
    const client = skillsClient(async () => []);
    await expect(client.validateComposePlan(["fetch", "clean"], { dir })).resolves.toEqual({
      valid: true,
      problems: [],
    });
    const check = await client.validateComposePlan(["clean"], { dir });
    expect(check.problems.map((problem) => [problem.skill, problem.missing])).toEqual([["clean", "fetch"]]);
    expect(() => checkComposePlan("fetch", { dir })).toThrow("a compose plan is a list of skill ids");
    expect(() => checkComposePlan([1], { dir })).toThrow("a compose plan is a list of skill ids");
  });
});

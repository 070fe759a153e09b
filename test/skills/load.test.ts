/** Skill files read from a directory: every format, and a clear one-line error for each bad one. */
import { describe, expect, it } from "vitest";
import { instructionsOf, loadSkills } from "../../src/skills/load.ts";
import { skillsDir } from "./fixtures.ts";

describe("loading skills", () => {
  it("reads YAML, JSON and markdown skills (one level down too), instructions from a file when they are asked for", async () => {
    const dir = skillsDir({
      "summarise.yaml":
        "id: summarise\nname: Summarise\ndescription: short summaries\nload_strategy: lazy\ntrigger_intent: summarise a long document\ninstructions_uri: texts/summarise.md\n",
      "texts/summarise.md": "Keep it to three bullet points.",
      "cite.json": JSON.stringify({ id: "cite", name: "Cite", description: "sources", instructions: "Cite." }),
      "pdf/SKILL.md":
        "---\nid: pdf\nname: PDF\ndescription: read PDFs\nload_strategy: user\n---\n\nUse the pdf tool.\n",
    });
    const skills = loadSkills(dir);
    expect(skills.map((skill) => [skill.definition.id, skill.definition.load_strategy])).toEqual([
      ["cite", "eager"],
      ["pdf", "user"],
      ["summarise", "lazy"],
    ]);
    const [cite, pdf, summarise] = skills;
    expect(await instructionsOf(pdf!, dir)).toBe("Use the pdf tool.");
    expect(await instructionsOf(cite!, dir)).toBe("Cite.");
    expect(await instructionsOf(summarise!, dir)).toBe("Keep it to three bullet points.");
  });

  it("reads a SKILL.md as the Agent Skills format writes it: name and description, the name as its id", async () => {
    const dir = skillsDir({
      "pdf-processing/SKILL.md":
        "---\nname: pdf-processing\ndescription: Extract text and tables from PDF files. Use when the user mentions PDFs.\n---\n\n# PDF processing\n\nUse pdfplumber.\n",
      "data-analysis/SKILL.md":
        '---\nname: data-analysis\ndescription: Analyse tables.\nlicense: Apache-2.0\ncompatibility: needs python3\nmetadata:\n  author: example-org\n  version: "1.0"\nallowed-tools: Bash(python3:*) Read\n---\nRead the table first.\n',
    });
    const skills = loadSkills(dir);
    expect(skills.map((skill) => [skill.definition.id, skill.definition.name, skill.definition.load_strategy])).toEqual(
      [
        ["data-analysis", "data-analysis", "eager"],
        ["pdf-processing", "pdf-processing", "eager"],
      ],
    );
    expect(skills[0]?.definition).toMatchObject({ license: "Apache-2.0", metadata: { author: "example-org" } });
    expect(await instructionsOf(skills[1]!, dir)).toBe("# PDF processing\n\nUse pdfplumber.");
    // A name that is not an id still needs one, and the error says so.
    const named = skillsDir({ "x/SKILL.md": "---\nname: PDF Reader\ndescription: x\n---\nRead.\n" });
    expect(() => loadSkills(named)).toThrow(/SKILL\.md: no id, and its name 'PDF Reader' is not one .*give an id$/);
  });

  it.each([
    [
      "a lazy skill without a trigger intent",
      "id: a\nname: A\ndescription: x\nload_strategy: lazy\ninstructions: y\n",
      /a\.yaml: .*trigger_intent.*needs a trigger_intent/,
    ],
    [
      "both instructions and instructions_uri",
      "id: a\nname: A\ndescription: x\ninstructions: y\ninstructions_uri: z.md\n",
      /a\.yaml: .*instructions.*not both/,
    ],
    ["neither", "id: a\nname: A\ndescription: x\n", /a\.yaml: .*instructions or instructions_uri/],
    ["a bad id", "id: A B\nname: A\ndescription: x\ninstructions: y\n", /a\.yaml: .*id.*lowercase/],
    [
      "an unknown field",
      "id: a\nname: A\ndescription: x\ninstructions: y\nloadstrategy: lazy\n",
      /a\.yaml: .*loadstrategy/,
    ],
    [
      "instructions outside the directory",
      "id: a\nname: A\ndescription: x\ninstructions_uri: ../../etc/passwd\n",
      /leaves the skills directory/,
    ],
    [
      "a missing instructions file",
      "id: a\nname: A\ndescription: x\ninstructions_uri: nowhere.md\n",
      /nowhere\.md is not a file/,
    ],
    ["broken YAML", "id: [a\n", /a\.yaml: /],
  ])("refuses %s with one line naming the file", (_, text, message) => {
    const dir = skillsDir({ "a.yaml": text });
    let error: unknown;
    try {
      loadSkills(dir);
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: "invalid_skill" });
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain("\n");
  });

  it("refuses two skills with one id, and a directory that is not there", () => {
    const twice = skillsDir({
      "a.yaml": "id: same\nname: A\ndescription: x\ninstructions: y\n",
      "b.json": JSON.stringify({ id: "same", name: "B", description: "x", instructions: "y" }),
    });
    expect(() => loadSkills(twice)).toThrow(/skill id 'same' is also/);
    expect(() => loadSkills(`${twice}/missing`)).toThrow(/cannot read the skills directory/);
  });
});

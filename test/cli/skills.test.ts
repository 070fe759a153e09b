/** `conclave skills list|select`, run as a user would: readable lines, JSON with --json, one-line errors. */
import { describe, expect, it } from "vitest";
import { runConclave } from "../helpers/cli.ts";
import { fiftySkillsDir, skillsDir } from "../skills/fixtures.ts";

// These commands connect to nothing: the URL is never dialled.
const NO_NATS = "nats://127.0.0.1:9";
const dir = fiftySkillsDir();

describe("conclave skills", () => {
  it("lists every skill, and says which a message loads and why", async () => {
    const listed = await runConclave(NO_NATS, ["skills", "list", "--dir", dir]);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split("\n");
    expect(lines).toHaveLength(52);
    expect(lines.find((line) => line.startsWith("fx.convert"))).toMatch(
      /lazy .*\(when: convert currency exchange rates\)/,
    );

    const selected = await runConclave(NO_NATS, [
      "skills",
      "select",
      "convert currency at the exchange rates",
      "--dir",
      dir,
    ]);
    expect(selected.code).toBe(0);
    expect(selected.stdout).toMatch(/^loaded: house-style, fx\.convert {2}\(embedder offline:256\)/);
    expect(selected.stdout).toMatch(/\+ fx\.convert +[\d.]+ >= 0\.35: close to its trigger intent/);

    const json = await runConclave(NO_NATS, ["skills", "select", "my cat broke a vase", "--dir", dir, "--json"]);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { loaded: string[]; ranking: { id: string; why: string }[] };
    expect(parsed.loaded).toEqual(["house-style"]);
    expect(parsed.ranking).toHaveLength(52);
  });

  it.each([
    [["skills", "select", "--dir", "."], /needs a message/],
    [["skills", "plan", "--dir", "."], /skills plan needs the plan's skills/],
    [["skills", "select", "hi", "--threshold", "2", "--dir", "."], /--threshold must be a number from 0 to 1/],
    [
      ["skills", "dance"],
      /give 'list', 'select "MESSAGE"', 'outputs', 'active', 'activate', 'deactivate', 'plan' or 'refresh'/,
    ],
  ])("refuses %j with one line", async (args, message) => {
    const result = await runConclave(NO_NATS, args);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it("names the bad file of a directory in one line", async () => {
    const bad = skillsDir({
      "broken.yaml": "id: broken\nname: B\ndescription: x\nload_strategy: lazy\ninstructions: y\n",
    });
    const result = await runConclave(NO_NATS, ["skills", "list", "--dir", bad]);
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/broken\.yaml: .*needs a trigger_intent/);
  });

  it("checks a compose plan: valid, or each problem on a line and exit status 1", async () => {
    const planDir = skillsDir({
      "fetch.yaml": "id: fetch\nname: Fetch\ndescription: d\ninstructions: get it\n",
      "clean.yaml": "id: clean\nname: Clean\ndescription: d\ninstructions: tidy it\nconsumes: [fetch]\n",
    });
    const valid = await runConclave(NO_NATS, ["skills", "plan", "fetch", "clean", "--dir", planDir]);
    expect(valid.code).toBe(0);
    expect(valid.stdout.trim()).toBe("valid: fetch → clean");
    const invalid = await runConclave(NO_NATS, ["skills", "plan", "clean", "ghost", "--dir", planDir]);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout.trim().split("\n")).toEqual([
      'step 1 ("clean") consumes the output of "fetch", which no earlier step produces: no earlier step runs it',
      'step 2 ("ghost"): no such skill',
    ]);
    const json = await runConclave(NO_NATS, ["skills", "plan", "clean", "--dir", planDir, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ valid: false, problems: [{ skill: "clean", missing: "fetch" }] });
  });
});

import { readFileSync } from "node:fs";
import { describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import type { InspectionRecord } from "../../src/inspect/record.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { LiveActors } from "../../src/viewer/liveActors.ts";
import {
  type RecipeDiagram,
  RecipeDiagrams,
  type RecipeDiagramsOptions,
  type TurnRef,
} from "../../src/viewer/recipeDiagrams.ts";

const approval = parseRecipeText(readFileSync("recipes/approval.yaml", "utf8")) as JsonObject;
const triage = parseRecipeText(readFileSync("recipes/triage.yaml", "utf8")) as JsonObject;

let seq = 0;
const base = (session: string) => ({ v: 1 as const, process: "runner:7", seq: seq++, ts: seq, session });
const created = (session: string, machine = "recipe"): InspectionRecord => ({
  ...base(session),
  kind: "actor",
  name: "x",
  machine,
});
const snapshot = (session: string, value: unknown, context: unknown, status = "active"): InspectionRecord => ({
  ...base(session),
  kind: "snapshot",
  event: { type: "x" },
  snapshot: { status, value, context },
});
const turn = (turn_id: number, more: object = {}) => ({ session_id: "s", turn_id, ...more });

/** A RecipeDiagrams wired as the viewer wires it, recording what it tells. */
function setUp(options: Partial<RecipeDiagramsOptions> = {}) {
  const told: { diagrams: RecipeDiagram[]; forgotten: string[]; records: InspectionRecord[]; warnings: string[] } = {
    diagrams: [],
    forgotten: [],
    records: [],
    warnings: [],
  };
  const readDocument = vi.fn(async (_turn: TurnRef): Promise<JsonObject | null> => null);
  const recipes = new RecipeDiagrams({
    readDocument,
    onDiagram: (diagram) => told.diagrams.push(diagram),
    onForget: (key) => told.forgotten.push(key),
    onRecord: (record) => told.records.push(record),
    warn: (message) => told.warnings.push(message),
    retryDelaysMs: [5, 5],
    ...options,
  });
  return { recipes, told, readDocument };
}

describe("RecipeDiagrams", () => {
  it("holds a recipe actor's records until its recipe is known, then passes them on naming its diagram", async () => {
    const { recipes, told, readDocument } = setUp();
    recipes.noteEvent({ session_id: "s", turn_id: 1, seq: 1, kind: "RECIPE_STARTED", payload: { document: approval } });
    expect(recipes.offer(created("a"))).toBe(true);
    expect(recipes.offer({ ...base("a"), kind: "event", event: { type: "xstate.init" } })).toBe(true);
    expect(recipes.offer(snapshot("a", { run: { draft: "working" } }, turn(1)))).toBe(true);
    expect(recipes.offer(created("other", "turn"))).toBe(false);
    expect(recipes.offer(snapshot("unknown", "x", {}))).toBe(false);
    await vi.waitFor(() => expect(told.records).toHaveLength(2));
    // Seen on the live feed: the log is not read.
    expect(readDocument).not.toHaveBeenCalled();
    const [diagram] = told.diagrams;
    expect(diagram).toMatchObject({
      recipe: "approval",
      shape: "workflow",
      key: expect.stringMatching(/^recipe:approval@/),
    });
    expect(diagram?.nodes["run.approve"]).toEqual({ id: "approve", kind: "human" });
    expect(diagram?.nodes["run.draft"]).toEqual({ id: "draft", kind: "agent" });
    expect(told.records.map((record) => record.kind)).toEqual(["actor", "snapshot"]);
    expect(told.records[0]).toMatchObject({ kind: "actor", machine: diagram?.key });
    // Resolved: the actor's next records are the caller's.
    expect(recipes.offer(snapshot("a", "suspended", turn(1), "done"))).toBe(false);
    expect(recipes.describe(diagram!.key, { status: "done", context: { suspended_at: "approve" } })).toEqual({
      waiting: "run.approve",
    });
    expect(recipes.describe(diagram!.key, { status: "active", context: { suspended_at: null } })).toBeNull();
    expect(recipes.describe("turn", { status: "done", context: { suspended_at: "approve" } })).toBeNull();
  });

  it("reads the turn's log when the live feed did not carry its start, looking again while it is not there yet", async () => {
    const { recipes, told, readDocument } = setUp();
    readDocument.mockResolvedValueOnce(null).mockRejectedValueOnce(new Error("no stream")).mockResolvedValue(triage);
    recipes.offer(created("b"));
    recipes.offer(snapshot("b", "loading", turn(2)));
    recipes.offer(snapshot("b", "preflight", turn(2)));
    await vi.waitFor(() => expect(told.records).toHaveLength(3));
    expect(readDocument).toHaveBeenCalledTimes(3);
    expect(readDocument).toHaveBeenCalledWith({ session_id: "s", turn_id: 2 });
    expect(told.diagrams.map((diagram) => diagram.recipe)).toEqual(["support-triage"]);
    expect(told.warnings).toEqual([]);
  });

  it("draws each recipe once, however many runs; forgets the oldest beyond its limit; warns when a recipe cannot be found or drawn", async () => {
    const { recipes, told, readDocument } = setUp({ maxDiagrams: 1 });
    readDocument.mockImplementation(async (at) =>
      at.turn_id === 9 ? null : at.turn_id === 8 ? { apiVersion: "nope" } : at.turn_id < 5 ? approval : triage,
    );
    for (const [session, id] of [
      ["c1", 1],
      ["c2", 2],
    ] as const) {
      recipes.offer(created(session));
      recipes.offer(snapshot(session, "loading", turn(id)));
    }
    await vi.waitFor(() => expect(told.records).toHaveLength(4));
    expect(told.diagrams).toHaveLength(1);
    expect(new Set(told.records.filter((r) => r.kind === "actor").map((r) => r.kind === "actor" && r.machine))).toEqual(
      new Set([told.diagrams[0]!.key]),
    );
    recipes.offer(created("c3"));
    recipes.offer(snapshot("c3", "loading", turn(6)));
    await vi.waitFor(() => expect(told.diagrams).toHaveLength(2));
    expect(told.forgotten).toEqual([told.diagrams[0]!.key]);
    expect(recipes.diagrams().map((diagram) => diagram.recipe)).toEqual(["support-triage"]);

    for (const [session, id] of [
      ["d1", 8],
      ["d2", 9],
    ] as const) {
      recipes.offer(created(session));
      recipes.offer(snapshot(session, "loading", turn(id)));
    }
    await vi.waitFor(() => expect(told.warnings).toHaveLength(2));
    expect(told.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^no diagram for the recipe of turn s\/8: .*apiVersion/),
        "no diagram for the recipe of turn s/9: no RECIPE_STARTED in its log",
      ]),
    );
    // Their records are dropped, not passed on as another machine's.
    expect(told.records).toHaveLength(6);
    recipes.close();
  });

  it("LiveActors follows a diagram's actors once told to, with where a suspended run waits", () => {
    const actors = new LiveActors(["turn"], {
      describe: (machine, snap) =>
        machine === "recipe:x" && (snap.context as { suspended_at?: string }).suspended_at
          ? { waiting: "run.ask" }
          : null,
    });
    expect(actors.apply(created("r", "recipe:x"))).toBeNull();
    actors.watch("recipe:x");
    expect(actors.apply(created("r", "recipe:x"))).toMatchObject({ machine: "recipe:x", status: "created" });
    expect(actors.apply(snapshot("r", "suspending", { suspended_at: null }))).not.toHaveProperty("waiting");
    expect(actors.apply(snapshot("r", "suspended", { suspended_at: "ask" }, "done"))).toMatchObject({
      value: "suspended",
      status: "done",
      waiting: "run.ask",
    });
  });
});

/**
 * A recipe run's memory by reference (issue 41): a fresh run records what it
 * retrieved as references only; a run that goes on from its log resolves the
 * references it recorded (one read by id, no retrieval) and warns of what is
 * gone since. The turn services are plain functions here: no NATS involved.
 */
import { describe, expect, it } from "vitest";
import { type MemoryRetrieveRequest, unresolvedMemoryWarning } from "../../src/contracts/memory.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import type { Recipe } from "../../src/recipes/recipe.ts";
import { type RecordedRunMemory, type RunMemoryServices, runMemory } from "../../src/runtime/recipeHost/runMemory.ts";

const recipe = { name: "echo", policy: {} } as Pick<Recipe, "name" | "policy">;
const refs = { episodes: [1], facts: ["fact.lives_in"], threads: [], procedures: [] };
const episode = {
  session_id: "s",
  turn_id: 1,
  user_text: "I live in Lisbon.",
  response: "Noted.",
  intent: "chat",
  ts: 1,
};

/** The run's memory with `recorded` from its log; what it asks memory, and what it records. */
function run(recorded: RecordedRunMemory, unresolved?: number) {
  const asked: MemoryRetrieveRequest[] = [];
  const records: TurnRecord[] = [];
  const services: RunMemoryServices = {
    retrieveMemory: async (request) => {
      asked.push(request);
      return {
        episodes: [episode],
        user_facts: ["lives in Lisbon"],
        open_threads: [],
        refs,
        ...(unresolved !== undefined ? { unresolved } : {}),
      };
    },
  };
  const memory = runMemory({
    services,
    recipe,
    turn: { session_id: "s", turn_id: 2 },
    inputs: { question: "Where can I buy saffron?" },
    recorded,
    record: (body) => records.push(body),
    signal: new AbortController().signal,
  });
  memory.begun();
  return { memory, asked, records };
}

describe("a recipe run's memory by reference", () => {
  it("records what a fresh run retrieved by reference, none of its text", async () => {
    const { memory, asked, records } = run({});
    expect((await memory.context())?.user_facts).toEqual(["lives in Lisbon"]);
    expect(asked.map((request) => request.resolve)).toEqual([undefined]);
    expect(records).toEqual([{ kind: "MEMORY_RETRIEVED", payload: { refs } }]);
    expect(JSON.stringify(records)).not.toContain("Lisbon");
  });

  it("resolves the references its log holds, by id, and warns of what is gone since", async () => {
    const { memory, asked, records } = run({ retrieved: { refs } }, 1);
    expect((await memory.context())?.episodes).toEqual([episode]);
    expect(asked.map((request) => request.resolve)).toEqual([refs]);
    expect(records).toEqual([{ kind: "STAGE_WARNING", payload: unresolvedMemoryWarning(1) }]);
  });

  it("gives back an older log's embedded retrieval as it is, asking nothing", async () => {
    const older = { episodes: [episode], user_facts: ["lives in Lisbon"], open_threads: [] };
    const { memory, asked, records } = run({ retrieved: older });
    expect(await memory.context()).toEqual(older);
    expect(asked).toEqual([]);
    expect(records).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { defaultTurnPolicy } from "../../machines/turn/index.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import type { AgentContext } from "../../src/contracts/agent.ts";
import { type ContextArenaState, emptyArenaState } from "../../src/contracts/context.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";
import { label } from "../helpers/turns.ts";
import { episode } from "./contexts.ts";

/**
 * Turn 11 of the real turn machine, in-process and offline. Its memory stores turns 1 to 10, and a
 * retrieval brings back three of them, as one of limit 3 does: turn 4 (on the message's topic) and the
 * latest two. A read by reference (what a compacting turn asks for) gets the turns it names.
 */
async function turnWithMemory(arena: ContextArenaState, reportedPromptTokens = 0) {
  const records: TurnRecord[] = [];
  const reads: number[][] = [];
  const stored = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((turn) => episode(turn, 40));
  const seen: AgentContext[] = [];
  const services = localTurnServices();
  const machine = provideTurn(
    {
      ...services,
      retrieveMemory: async (request) => {
        if (request.resolve) {
          reads.push(request.resolve.episodes);
          const named = request.resolve.episodes;
          return { episodes: stored.filter((item) => named.includes(item.turn_id)), user_facts: [], open_threads: [] };
        }
        return {
          episodes: stored.filter((item) => [4, 9, 10].includes(item.turn_id)),
          user_facts: ["The user grows tomatoes."],
          open_threads: [],
        };
      },
      callAgent: async (request, signal, options) => {
        seen.push(request.context);
        const reply = await services.callAgent(request, signal, options);
        return reportedPromptTokens
          ? { ...reply, usage: { prompt_tokens: reportedPromptTokens, completion_tokens: 9 } }
          : reply;
      },
    },
    (_context, record) => records.push(record),
  );
  const actor = createActor(machine, {
    input: {
      session_id: "s-arena",
      turn_id: 11,
      text: "I'm stressed about the garden, what should I do?",
      policy: { ...defaultTurnPolicy, context: { budget: { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 1_500 } } },
      modulators: neutralModulators(),
      stance: neutralStance(),
      context_arena: arena,
    },
  });
  actor.start();
  const output = await toPromise(actor);
  return { records, seen, output, reads };
}

/** The arena turn 10 left: no summary yet, and the model's count of turn 10's prompt, past the ratio. */
const pressed = (): ContextArenaState => ({ ...emptyArenaState(), observed_tokens: 1_300 });

describe("the context arena in the turn", () => {
  it("compacts at the configured pressure, records it, and gives the agents the planned context", async () => {
    const { records, seen, output, reads } = await turnWithMemory(pressed());
    // The turn read the conversation from memory once, every turn before it (it compacts).
    expect(reads).toEqual([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]);
    const labels = records.map(label);
    const agentsStage = labels.indexOf("stage:agents");
    expect(labels.slice(agentsStage, agentsStage + 4)).toEqual([
      "stage:agents",
      "CONTEXT_COMPACTED",
      "CONTEXT_PLANNED",
      "SCHEDULE_PLANNED",
    ]);
    const compacted = records.find((record) => record.kind === "CONTEXT_COMPACTED");
    const planned = records.find((record) => record.kind === "CONTEXT_PLANNED");
    if (compacted?.kind !== "CONTEXT_COMPACTED" || planned?.kind !== "CONTEXT_PLANNED") throw new Error("no events");
    expect(compacted.payload.pressure.ratio).toBeGreaterThanOrEqual(0.8);
    // Every turn of the conversation but the last two, not only the one older turn memory retrieved.
    expect(compacted.payload).toMatchObject({
      summariser: "offline",
      through_turn: 8,
      turns_compacted: [1, 2, 3, 4, 5, 6, 7, 8],
    });
    expect(planned.payload.encoding).toBe("cl100k_base");
    expect(planned.payload.encoding_exact).toBe(false);
    expect(planned.payload.planned_tokens).toBeLessThanOrEqual(1_500);
    expect(planned.payload.zones.working_memory.kept).toEqual(["summary", "episode:10", "episode:9"]);
    // Turn 4, which memory recalled for this message, is not hidden by the summary's cut-off: it is in recall.
    expect(planned.payload.zones.recall.kept).toContain("episode:4");

    // The agents see the summary, the turns after it, and the older turn memory recalled.
    expect(seen.length).toBeGreaterThan(0);
    for (const context of seen) {
      expect(context.summary?.through_turn).toBe(8);
      expect(context.episodes.map((item) => item.turn_id)).toEqual([4, 9, 10]);
    }
    expect(output.context_arena).toMatchObject({ compactions: 1, summary: { through_turn: 8 } });
  });

  it("does not compact again below the ratio, and carries the model's count of the prompt to the next turn", async () => {
    const first = await turnWithMemory(pressed());
    const { records, output, reads } = await turnWithMemory(first.output.context_arena!, 700);
    expect(records.map(label)).not.toContain("CONTEXT_COMPACTED");
    // A turn that does not compact reads nothing more than its retrieval.
    expect(reads).toEqual([]);
    expect(records.map(label)).toContain("CONTEXT_PLANNED");
    expect(output.context_arena).toMatchObject({ compactions: 1, observed_tokens: 700 });
  });
});

/**
 * The compiled recipe machine on its own, deterministic: its actors are
 * provided in-process with scripted answers (as a host provides them with
 * `machine.provide`), and each test reads the output and the records.
 */

import { describe, expect, it } from "vitest";
import { createActor, fromCallback, fromPromise } from "xstate";
import { compileRecipe } from "../../machines/recipe/index.ts";
import type {
  RecipeAgentCall,
  RecipeCouncilResult,
  RecipeRunInput,
  RecipeRunOutput,
} from "../../src/contracts/recipeProtocol.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { loadRecipe } from "../../src/recipes/load.ts";

type Answer = unknown | Error | Promise<unknown>;

interface Run {
  output: RecipeRunOutput;
  records: TurnRecord[];
  calls: RecipeAgentCall[];
}

/** Runs a recipe document with scripted agents (`agents[agentId](call, index)`); resolves when the machine is done. */
function run(
  document: Record<string, unknown>,
  agents: Record<string, (call: RecipeAgentCall, index: number) => Answer>,
  input: Partial<RecipeRunInput> = {},
  onStart?: (send: (event: { type: "turn.cancel"; reason: string }) => void) => void,
): Promise<Run> {
  const records: TurnRecord[] = [];
  const calls: RecipeAgentCall[] = [];
  const machine = compileRecipe(loadRecipe({ apiVersion: "coreason.ai/v2", kind: "Recipe", ...document })).provide({
    actors: {
      loadBlackboard: fromPromise(async (): Promise<Record<string, unknown> | null> => null),
      persist: fromPromise(async () => {}),
      runCouncil: fromPromise(async (): Promise<RecipeCouncilResult> => ({ decision: null, votes: {}, failed: [] })),
      runLogic: fromPromise(async (): Promise<unknown> => null),
      callAgent: fromCallback(({ input: call, sendBack }) => {
        const index = calls.push(call) - 1;
        const node = call.node;
        let live = true;
        Promise.resolve()
          .then(() => agents[call.agent]!(call, index))
          .then((answer) => {
            if (!live) return;
            if (answer instanceof Error)
              sendBack({ type: "node.failed", node, code: "agent_failed", message: answer.message });
            else {
              sendBack({ type: "node.stream.start", node, stream_id: `${node}:default`, content_type: "text/plain" });
              sendBack({ type: "node.stream.chunk", node, stream_id: `${node}:default`, delta: "…" });
              sendBack({ type: "node.stream.end", node, stream_id: `${node}:default` });
              sendBack({ type: "node.answered", node, output: answer, agent: call.agent, worker: "w", elapsed_ms: 1 });
            }
          });
        return () => {
          live = false;
        };
      }),
    },
    actions: { record: (_, record) => void records.push(record) },
  });
  return new Promise((resolve, reject) => {
    const actor = createActor(machine, { input: { session_id: "s", turn_id: 1, inputs: {}, ...input } });
    actor.subscribe({
      complete: () => resolve({ output: actor.getSnapshot().output!, records, calls }),
      error: reject,
    });
    actor.start();
    onStart?.((event) => actor.send(event));
  });
}

const kinds = (records: TurnRecord[]) => records.map((record) => record.kind);

describe("a compiled recipe", () => {
  const writerJudge = (maxRefinements: number) => ({
    metadata: { name: "wj" },
    topology: {
      nodes: [
        { type: "agent", id: "write", agent_ref: "a.writer", inputs_map: { topic: "topic" }, output_key: "draft" },
        {
          type: "evaluator",
          id: "judge",
          target_variable: "draft",
          evaluator_agent_ref: "a.judge",
          pass_threshold: 0.8,
          max_refinements: maxRefinements,
          pass_route: "done",
          fail_route: "write",
          feedback_variable: "critique",
        },
        { type: "agent", id: "done", agent_ref: "a.done" },
      ],
      edges: [{ source: "write", target: "judge" }],
    },
  });

  it("evaluator: a failing score writes the critique, and the generator's next prompt carries it", async () => {
    let scored = 0;
    const { output, calls } = await run(
      writerJudge(3),
      {
        "a.writer": (call) => `draft about ${String(call.inputs.topic)}`,
        "a.judge": () => ({ score: ++scored === 1 ? 4 : 9, critique: "needs an example" }),
        "a.done": () => "ok",
      },
      { inputs: { topic: "tides" } },
    );
    expect(output.outcome).toEqual({ status: "Complete" });
    const writes = calls.filter((call) => call.agent === "a.writer");
    expect(writes).toHaveLength(2);
    expect(writes[0]?.feedback).toBeUndefined();
    expect(writes[1]?.feedback).toBe("needs an example");
    expect(writes[1]?.prompt).toBe("tides\n\nFeedback on your previous answer (address it):\nneeds an example");
    // Scores on a 0–10 scale are normalized.
    const judged = calls.filter((call) => call.agent === "a.judge");
    expect(judged[0]?.inputs).toMatchObject({ target: "draft about tides", pass_threshold: 0.8 });
    expect(output.blackboard.critique).toBe("needs an example");
  });

  it("evaluator: past max_refinements the loop stops and the run goes on, with a warning", async () => {
    const { output, calls, records } = await run(writerJudge(1), {
      "a.writer": () => "thin",
      "a.judge": () => ({ score: 0.1, critique: "thin" }),
      "a.done": () => "ok",
    });
    expect(calls.map((call) => call.agent)).toEqual(["a.writer", "a.judge", "a.writer", "a.judge", "a.done"]);
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "recipe", code: "refinements_exhausted", subject: "judge" }],
    });
    expect(kinds(records)).toContain("STAGE_WARNING");
  });

  it("router: strict matching (a number matches its JSON text, an object nothing), then the default", async () => {
    const router = (value: unknown) =>
      run(
        {
          metadata: { name: "r" },
          topology: {
            nodes: [
              {
                type: "router",
                id: "route",
                input_key: "x",
                routes: { "3": "three", yes: "yes" },
                default_route: "other",
              },
              { type: "agent", id: "three", agent_ref: "a.three" },
              { type: "agent", id: "yes", agent_ref: "a.yes" },
              { type: "agent", id: "other", agent_ref: "a.other" },
            ],
          },
        },
        { "a.three": () => 3, "a.yes": () => "yes", "a.other": () => "other" },
        { inputs: { x: value } },
      );
    expect((await router(3)).calls.map((call) => call.agent)).toEqual(["a.three"]);
    expect((await router("3")).calls.map((call) => call.agent)).toEqual(["a.three"]);
    expect((await router("Yes")).calls.map((call) => call.agent)).toEqual(["a.other"]);
    expect((await router({ yes: true })).calls.map((call) => call.agent)).toEqual(["a.other"]);
  });

  it("parallel fork: both branches are asked before either answers; sequential: one after the other", async () => {
    const fork = (mode: string) => ({
      metadata: { name: "f" },
      policy: { execution_mode: mode },
      topology: {
        nodes: [
          { type: "agent", id: "plan", agent_ref: "a.plan" },
          { type: "agent", id: "left", agent_ref: "a.left" },
          { type: "agent", id: "right", agent_ref: "a.right" },
          { type: "agent", id: "join", agent_ref: "a.join" },
        ],
        edges: [
          { source: "plan", target: "left" },
          { source: "plan", target: "right" },
          { source: "left", target: "join" },
          { source: "right", target: "join" },
        ],
      },
    });
    // In parallel mode each branch answers only once both were asked: it would never finish otherwise.
    let bothAsked: () => void = () => {};
    const asked = new Promise<void>((resolve) => {
      bothAsked = resolve;
    });
    let branchCalls = 0;
    const branch = async () => {
      if (++branchCalls === 2) bothAsked();
      await asked;
      return "found";
    };
    const parallel = await run(fork("parallel"), {
      "a.plan": () => 1,
      "a.left": branch,
      "a.right": branch,
      "a.join": () => 2,
    });
    expect(parallel.output.outcome).toEqual({ status: "Complete" });
    expect(parallel.output.blackboard).toMatchObject({ left: "found", right: "found", join: 2 });

    const order: string[] = [];
    const step = (name: string) => () => {
      order.push(name);
      return name;
    };
    const sequential = await run(fork("sequential"), {
      "a.plan": step("plan"),
      "a.left": step("left"),
      "a.right": step("right"),
      "a.join": step("join"),
    });
    expect(sequential.output.outcome).toEqual({ status: "Complete" });
    const started = sequential.records.flatMap((record) =>
      record.kind === "NODE_STARTED" || record.kind === "NODE_COMPLETED"
        ? [`${record.kind === "NODE_STARTED" ? "+" : "-"}${record.payload.node}`]
        : [],
    );
    expect(started).toEqual(["+plan", "-plan", "+left", "-left", "+right", "-right", "+join", "-join"]);
  });

  const approval = {
    metadata: { name: "h" },
    topology: {
      nodes: [
        { type: "agent", id: "draft", agent_ref: "a.writer" },
        {
          type: "human",
          id: "ok",
          prompt: "Publish?",
          required_role: "editor",
          timeout_seconds: 60,
          timeout_route: "late",
        },
        { type: "agent", id: "publish", agent_ref: "a.publish" },
        { type: "agent", id: "late", agent_ref: "a.late" },
      ],
      edges: [
        { source: "draft", target: "ok" },
        { source: "ok", target: "publish" },
      ],
    },
  };
  const agents = { "a.writer": () => "text", "a.publish": () => "live", "a.late": () => "archived" };

  it("human: suspends with a checkpoint; resumed from it with an answer, goes on without calling earlier agents", async () => {
    const first = await run(approval, agents);
    expect(first.output.suspended).toEqual({ node: "ok", prompt: "Publish?", required_role: "editor" });
    expect(first.output.outcome).toBeUndefined();
    expect(kinds(first.records).slice(-2)).toEqual(["HUMAN_INPUT_REQUESTED", "TURN_SUSPENDED"]);
    const checkpoint = first.records.findLast((record) => record.kind === "NODE_STARTED");
    if (checkpoint?.kind !== "NODE_STARTED" || !checkpoint.payload.checkpoint) throw new Error("no checkpoint");
    expect(checkpoint.payload.checkpoint.blackboard).toEqual({ draft: "text" });

    const resumed = await run(approval, agents, {
      resume: {
        at: "ok",
        checkpoint: checkpoint.payload.checkpoint,
        answer: { node: "ok", answer: { approved: true }, user_id: "ana", timed_out: false },
      },
    });
    expect(resumed.output.outcome).toEqual({ status: "Complete" });
    expect(resumed.calls.map((call) => call.agent)).toEqual(["a.publish"]);
    expect(resumed.output.blackboard).toEqual({ draft: "text", ok: { approved: true }, publish: "live" });

    const timedOut = await run(approval, agents, {
      resume: {
        at: "ok",
        checkpoint: checkpoint.payload.checkpoint,
        answer: { node: "ok", answer: null, timed_out: true },
      },
    });
    expect(timedOut.calls.map((call) => call.agent)).toEqual(["a.late"]);
  });

  it("a cancellation mid-node ends the run Cancelled, TURN_COMPLETED last", async () => {
    let cancel: (event: { type: "turn.cancel"; reason: string }) => void = () => {};
    const never = new Promise<unknown>(() => {});
    const done = run(
      { metadata: { name: "c" }, topology: [{ type: "agent", id: "slow", agent_ref: "a.slow" }] },
      { "a.slow": () => never },
      {},
      (send) => {
        cancel = send;
      },
    );
    await Promise.resolve();
    cancel({ type: "turn.cancel", reason: "stop" });
    const { output, records } = await done;
    expect(output.outcome).toEqual({ status: "Cancelled", reason: "stop" });
    expect(kinds(records).at(-1)).toBe("TURN_COMPLETED");
  });
});

/**
 * The compiled recipe machine, node kind by node kind and policy field by
 * policy field, in-process and deterministic: agents, councils, logic
 * handlers and the blackboard store are scripted (test/helpers/recipeMachine.ts)
 * and each test waits for the actor to complete, then reads the final
 * output and blackboard and the events the run recorded.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RecipeAgentCall, RecipeCouncilResult, RecipeLogicCall } from "../../src/contracts/recipeProtocol.ts";
import type { RecipeCheckpoint } from "../../src/contracts/recipeRun.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { loadRecipe, loadRecipeFile } from "../../src/recipes/load.ts";
import type { Recipe } from "../../src/recipes/recipe.ts";
import { AgentScriptError, deferred, hang, kindsOf, recordsOf, reply, runRecipe } from "../helpers/recipeMachine.ts";

const HEADER = { apiVersion: "coreason.ai/v2", kind: "Recipe", metadata: { name: "test" } } as const;

/** A graph recipe document, loaded as a runner loads it. */
const graph = (topology: unknown, extra: Record<string, unknown> = {}): Recipe =>
  loadRecipe({ ...HEADER, ...extra, topology });
/** A workflow manifest, loaded as a runner loads it. */
const workflow = (
  steps: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  options: { logicHandlers?: string[] } = {},
): Recipe => loadRecipe({ ...HEADER, ...extra, workflow: { steps } }, options);

const agent = (id: string, agent_ref: string, extra: Record<string, unknown> = {}) => ({
  type: "agent",
  id,
  agent_ref,
  ...extra,
});
const edge = (source: string, target: string, condition?: string) => ({
  source,
  target,
  ...(condition ? { condition } : {}),
});

/** The checkpoint a suspended run recorded when its human node `node` started (what a host resumes from). */
function checkpointAt(records: readonly TurnRecord[], node: string): RecipeCheckpoint {
  const started = recordsOf(records, "NODE_STARTED").filter((payload) => payload.node === node);
  const checkpoint = started.at(-1)?.checkpoint;
  if (!checkpoint) throw new Error(`no checkpoint recorded at '${node}'`);
  return checkpoint;
}

const routes = (records: readonly TurnRecord[]) =>
  recordsOf(records, "ROUTE_TAKEN").map((route) => `${route.from}->${route.to}`);

describe("agent node", () => {
  const recipe = graph({
    nodes: [
      agent("ask", "a.asker", {
        inputs_map: { question: "request.question", second: "request.items.1" },
        output_key: "answers.first",
        system_prompt_override: "Be brief.",
      }),
      agent("echo", "a.echo", { inputs_map: { text: "answers.first.text" } }),
      agent("whole", "a.whole"),
    ],
    edges: [edge("ask", "echo"), edge("echo", "whole")],
  });

  it("reads its inputs from dotted paths, builds the prompt from them and writes its answer at output_key", async () => {
    const { output, calls, records, persisted } = await runRecipe(recipe, {
      agents: {
        "a.asker": (call) => ({ text: `answer to ${String(call.inputs.question)}` }),
        "a.echo": (call) => call.prompt,
        "a.whole": () => "done",
      },
      blackboard: { stored: "from an earlier run", request: { question: "old question" } },
      input: { inputs: { request: { question: "why?", items: ["x", "y"] } } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    // Several inputs: one per line; the system prompt travels beside them.
    expect(calls[0]).toMatchObject({
      node: "ask",
      agent: "a.asker",
      inputs: { question: "why?", second: "y" },
      prompt: "question: why?\nsecond: y",
      system_prompt: "Be brief.",
      attempt: 1,
    });
    expect(calls[0]?.feedback).toBeUndefined();
    // A lone string input is the prompt as it is.
    expect(calls[1]).toMatchObject({ node: "echo", inputs: { text: "answer to why?" }, prompt: "answer to why?" });
    expect(calls[1]?.system_prompt).toBeUndefined();
    // No inputs_map: the whole blackboard (the stored one under the inputs).
    expect(calls[2]?.inputs).toEqual({
      stored: "from an earlier run",
      request: { question: "why?", items: ["x", "y"] },
      answers: { first: { text: "answer to why?" } },
      echo: "answer to why?",
    });
    expect(output.blackboard).toEqual({
      stored: "from an earlier run",
      request: { question: "why?", items: ["x", "y"] },
      answers: { first: { text: "answer to why?" } },
      echo: "answer to why?",
      whole: "done",
    });
    expect(output.response).toBe(JSON.stringify(output.blackboard));
    expect(kindsOf(records)).toEqual([
      "PREFLIGHT_CHECKED",
      "NODE_STARTED",
      "NODE_COMPLETED",
      "ROUTE_TAKEN",
      "NODE_STARTED",
      "NODE_COMPLETED",
      "ROUTE_TAKEN",
      "NODE_STARTED",
      "NODE_COMPLETED",
      "ROUTE_TAKEN",
      "TURN_COMPLETED",
    ]);
    expect(recordsOf(records, "NODE_STARTED")[0]).toEqual({
      node: "ask",
      kind: "agent",
      step: 1,
      attempt: 1,
      checkpoint: {
        blackboard: {
          stored: "from an earlier run",
          request: { question: "why?", items: ["x", "y"] },
        },
        steps: 0,
        refinements: {},
      },
    });
    expect(recordsOf(records, "NODE_COMPLETED")[0]).toEqual({
      node: "ask",
      kind: "agent",
      output_key: "answers.first",
      output: { text: "answer to why?" },
      elapsed_ms: 1,
      agent: "a.asker",
      worker: "w1",
    });
    expect(routes(records)).toEqual(["ask->echo", "echo->whole", "whole->end"]);
    expect(recordsOf(records, "TURN_COMPLETED")[0]).toMatchObject({
      outcome: { status: "Complete" },
      output: output.blackboard,
    });
    // Saved once, at the end, checked against the outputs.
    expect(persisted).toEqual([{ session_id: "s", turn_id: 1, blackboard: output.blackboard, checkOutputs: true }]);
  });

  it("a path that does not resolve is an unset input, not an error", async () => {
    const { output, calls } = await runRecipe(graph([agent("a", "a.x", { inputs_map: { q: "no.such.path" } })]), {
      agents: { "a.x": (call) => `got ${JSON.stringify(call.inputs)}` },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(calls[0]?.inputs).toEqual({ q: undefined });
    expect(calls[0]?.prompt).toBe("");
    expect(output.blackboard.a).toBe("got {}");
  });

  it("a conditioned edge is taken when its condition holds over the blackboard; none holding ends the path", async () => {
    const recipe = graph({
      nodes: [agent("check", "a.check"), agent("big", "a.big"), agent("small", "a.small")],
      edges: [edge("check", "big", "check.size > 10"), edge("check", "small", "check.size <= 10 and check.size > 0")],
    });
    const scripts = (size: number) => ({
      agents: { "a.check": () => ({ size }), "a.big": () => "big", "a.small": () => "small" },
    });
    const big = await runRecipe(recipe, scripts(11));
    expect(big.calls.map((call) => call.agent)).toEqual(["a.check", "a.big"]);
    expect(recordsOf(big.records, "ROUTE_TAKEN")[0]).toEqual({ from: "check", to: "big", reason: "check.size > 10" });
    const small = await runRecipe(recipe, scripts(3));
    expect(small.calls.map((call) => call.agent)).toEqual(["a.check", "a.small"]);
    const none = await runRecipe(recipe, scripts(0));
    expect(none.calls.map((call) => call.agent)).toEqual(["a.check"]);
    expect(none.output.outcome).toEqual({ status: "Complete" });
    expect(recordsOf(none.records, "ROUTE_TAKEN")).toEqual([{ from: "check", to: "end", reason: "no condition held" }]);
  });

  it("a blackboard that cannot be read fails the run before any node", async () => {
    const { output, calls } = await runRecipe(graph([agent("a", "a.x")]), {
      blackboard: Object.assign(new Error("store down"), { code: "unavailable" }),
    });
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "unavailable", message: "the blackboard could not be read: store down" },
    });
    expect(calls).toEqual([]);
  });

  it("a run cancelled before it started ends at once, Cancelled, calling nobody", async () => {
    const { output, calls, records } = await runRecipe(graph([agent("a", "a.x")]), {
      input: { cancelled: "client went away" },
    });
    expect(output.outcome).toEqual({ status: "Cancelled", reason: "client went away" });
    expect(output.response).toBe("");
    expect(calls).toEqual([]);
    expect(kindsOf(records)).toEqual(["TURN_COMPLETED"]);
  });
});

describe("router node", () => {
  const recipe = graph({
    nodes: [
      { type: "router", id: "route", input_key: "ticket.priority", routes: { "3": "urgent", low: "later" } },
      agent("urgent", "a.urgent"),
      agent("later", "a.later"),
    ],
  });
  const routed = (value: unknown) =>
    runRecipe(recipe, {
      agents: { "a.urgent": () => "u", "a.later": () => "l" },
      input: { inputs: { ticket: { priority: value } } },
    });

  it("matches strictly: the number 3 and the string '3' take route '3'", async () => {
    for (const value of [3, "3"]) {
      const { output, calls, records } = await routed(value);
      expect(output.outcome).toEqual({ status: "Complete" });
      expect(calls.map((call) => call.node)).toEqual(["urgent"]);
      expect(recordsOf(records, "ROUTE_TAKEN")[0]).toEqual({
        from: "route",
        to: "urgent",
        reason: "ticket.priority is '3'",
      });
      expect(recordsOf(records, "NODE_STARTED")[0]).toMatchObject({ node: "route", kind: "router", step: 1 });
    }
  });

  it("an object, an array, '3.0', ' 3' or a missing value match nothing; without a default the run fails no_route", async () => {
    for (const value of [{ value: 3 }, [3], "3.0", " 3", 3.5, undefined]) {
      const { output, calls } = await routed(value);
      expect(calls).toEqual([]);
      expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "no_route" } });
    }
    const { output } = await routed({ value: 3 });
    expect(output.outcome).toEqual({
      status: "Failed",
      error: {
        code: "no_route",
        message: `router 'route': no route for ticket.priority = {"value":3} and no default_route`,
      },
    });
  });

  it("default_route is taken only when no route matches", async () => {
    const withDefault = graph({
      nodes: [
        { type: "router", id: "route", input_key: "k", routes: { yes: "yes", true: "bool" }, default_route: "other" },
        agent("yes", "a.yes"),
        agent("bool", "a.bool"),
        agent("other", "a.other"),
      ],
    });
    const agents = { "a.yes": () => 1, "a.bool": () => 2, "a.other": () => 3 };
    const matched = await runRecipe(withDefault, { agents, input: { inputs: { k: "yes" } } });
    expect(matched.calls.map((call) => call.node)).toEqual(["yes"]);
    const boolean = await runRecipe(withDefault, { agents, input: { inputs: { k: true } } });
    expect(boolean.calls.map((call) => call.node)).toEqual(["bool"]);
    const unmatched = await runRecipe(withDefault, { agents, input: { inputs: { k: "YES" } } });
    expect(unmatched.calls.map((call) => call.node)).toEqual(["other"]);
    expect(recordsOf(unmatched.records, "ROUTE_TAKEN")[0]).toEqual({
      from: "route",
      to: "other",
      reason: "no route for k: default",
    });
  });
});

describe("switch step", () => {
  const recipe = (withDefault: boolean) =>
    workflow(
      {
        decide: {
          type: "switch",
          cases: { "score >= 90": "top", "score >= 50": "pass", "score > 1000": "never" },
          ...(withDefault ? { default: "retry" } : {}),
        },
        top: { type: "agent", agent: "a.top" },
        pass: { type: "agent", agent: "a.pass" },
        never: { type: "agent", agent: "a.never" },
        retry: { type: "agent", agent: "a.retry" },
      },
      { policy: { max_retries: 0 } },
    );
  const agents = { "a.top": () => "t", "a.pass": () => "p", "a.never": () => "n", "a.retry": () => "r" };

  it("the first case that holds wins, in document order", async () => {
    const top = await runRecipe(recipe(true), { agents, input: { inputs: { score: 95 } } });
    // 95 satisfies both of the first two cases: the first is taken.
    expect(top.calls.map((call) => call.node)).toEqual(["top"]);
    expect(recordsOf(top.records, "ROUTE_TAKEN")[0]).toEqual({
      from: "decide",
      to: "top",
      reason: "case score >= 90 held",
    });
    const pass = await runRecipe(recipe(true), { agents, input: { inputs: { score: 60 } } });
    expect(pass.calls.map((call) => call.node)).toEqual(["pass"]);
  });

  it("default when no case holds (an unset variable holds no comparison)", async () => {
    for (const inputs of [{ score: 10 }, {}, { score: "95" }]) {
      const { calls, records } = await runRecipe(recipe(true), { agents, input: { inputs } });
      expect(calls.map((call) => call.node)).toEqual(["retry"]);
      expect(recordsOf(records, "ROUTE_TAKEN")[0]).toEqual({
        from: "decide",
        to: "retry",
        reason: "no case held: default",
      });
    }
  });

  it("no case and no default: Failed no_route", async () => {
    const { output, calls } = await runRecipe(recipe(false), { agents, input: { inputs: { score: 10 } } });
    expect(calls).toEqual([]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "no_route", message: "switch 'decide': no case held and it has no default" },
    });
  });
});

describe("evaluator node", () => {
  const writerJudge = (maxRefinements: number) =>
    graph({
      nodes: [
        agent("write", "a.writer", { inputs_map: { topic: "topic" }, output_key: "draft" }),
        {
          type: "evaluator",
          id: "judge",
          target_variable: "draft",
          evaluator_agent_ref: "a.judge",
          evaluation_profile: { clarity: "is it clear?" },
          pass_threshold: 0.7,
          max_refinements: maxRefinements,
          pass_route: "publish",
          fail_route: "write",
          feedback_variable: "review.critique",
        },
        agent("publish", "a.publish", { inputs_map: { text: "draft" } }),
      ],
      edges: [edge("write", "judge")],
    });

  it("a pass goes by pass_route and writes no feedback", async () => {
    const { output, calls, records } = await runRecipe(writerJudge(2), {
      agents: {
        "a.writer": (call) => `about ${String(call.inputs.topic)}`,
        "a.judge": () => ({ score: 0.7, critique: "fine" }),
        "a.publish": () => "published",
      },
      input: { inputs: { topic: "tides" } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(calls.map((call) => call.node)).toEqual(["write", "judge", "publish"]);
    expect(calls[1]).toMatchObject({
      agent: "a.judge",
      inputs: { target: "about tides", criteria: { clarity: "is it clear?" }, pass_threshold: 0.7 },
    });
    expect(output.blackboard.review).toBeUndefined();
    expect(recordsOf(records, "EVALUATION_SCORED")).toEqual([
      { node: "judge", score: 0.7, passed: true, refinement: 0, critique: "fine" },
    ]);
    expect(routes(records)).toEqual(["write->judge", "judge->publish", "publish->end"]);
  });

  it("a fail writes the critique to feedback_variable, and the generator's next call carries it", async () => {
    let judged = 0;
    const { output, calls, records } = await runRecipe(writerJudge(2), {
      agents: {
        "a.writer": (call) => `attempt ${call.feedback ? 2 : 1} about ${String(call.inputs.topic)}`,
        "a.judge": () => (++judged === 1 ? { score: 4, critique: "add an example" } : "Score: 9/10. Good."),
        "a.publish": () => "published",
      },
      input: { inputs: { topic: "tides" } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(calls.map((call) => call.node)).toEqual(["write", "judge", "write", "judge", "publish"]);
    expect(calls[0]?.feedback).toBeUndefined();
    expect(calls[0]?.prompt).toBe("tides");
    expect(calls[2]).toMatchObject({
      feedback: "add an example",
      prompt: "tides\n\nFeedback on your previous answer (address it):\nadd an example",
    });
    expect(calls[3]?.inputs.target).toBe("attempt 2 about tides");
    expect(output.blackboard.review).toEqual({ critique: "add an example" });
    expect(output.blackboard.draft).toBe("attempt 2 about tides");
    expect(recordsOf(records, "EVALUATION_SCORED")).toEqual([
      { node: "judge", score: 0.4, passed: false, refinement: 0, critique: "add an example" },
      { node: "judge", score: 0.9, passed: true, refinement: 1, critique: "Score: 9/10. Good." },
    ]);
    expect(recordsOf(records, "ROUTE_TAKEN")[1]).toEqual({
      from: "judge",
      to: "write",
      reason: "below the pass threshold: refine",
    });
  });

  it("past max_refinements it goes on by pass_route with a refinements_exhausted warning (PartialSuccess)", async () => {
    const { output, calls, records } = await runRecipe(writerJudge(1), {
      agents: {
        "a.writer": () => "thin",
        "a.judge": () => ({ score: 0.1, critique: "too thin" }),
        "a.publish": () => "published",
      },
    });
    expect(calls.map((call) => call.node)).toEqual(["write", "judge", "write", "judge", "publish"]);
    const warning = {
      stage: "recipe",
      code: "refinements_exhausted",
      message: "evaluator 'judge': still below 0.7 after 1 refinement(s); going on with the last attempt",
      subject: "judge",
    };
    expect(output.outcome).toEqual({ status: "PartialSuccess", warnings: [warning] });
    expect(recordsOf(records, "STAGE_WARNING")).toEqual([warning]);
    expect(recordsOf(records, "EVALUATION_SCORED").map((scored) => [scored.passed, scored.refinement])).toEqual([
      [false, 0],
      [false, 1],
    ]);
    expect(recordsOf(records, "ROUTE_TAKEN").at(-2)).toEqual({
      from: "judge",
      to: "publish",
      reason: "max_refinements reached",
    });
    expect(output.blackboard.publish).toBe("published");
  });

  it("max_refinements 0: one verdict, then on by the pass route", async () => {
    const { output, calls } = await runRecipe(writerJudge(0), {
      agents: { "a.writer": () => "x", "a.judge": () => 0.2, "a.publish": () => "p" },
    });
    expect(calls.map((call) => call.node)).toEqual(["write", "judge", "publish"]);
    expect(output.outcome).toMatchObject({ status: "PartialSuccess" });
  });

  it("an answer without a score is a node failure (invalid_verdict)", async () => {
    const { output, calls, records } = await runRecipe(writerJudge(2), {
      agents: {
        "a.writer": () => "x",
        "a.judge": () => ({ verdict: "looks good to me" }),
        "a.publish": () => "p",
      },
    });
    expect(calls.map((call) => call.node)).toEqual(["write", "judge"]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: {
        code: "invalid_verdict",
        message: `node 'judge' failed after 1 attempt(s): judge 'a.judge' answered without a score: {"verdict":"looks good to me"}`,
      },
    });
    expect(recordsOf(records, "NODE_FAILED")).toEqual([
      {
        node: "judge",
        kind: "evaluator",
        code: "invalid_verdict",
        message: `judge 'a.judge' answered without a score: {"verdict":"looks good to me"}`,
        attempt: 1,
        retrying: false,
      },
    ]);
    expect(kindsOf(records)).not.toContain("EVALUATION_SCORED");
  });
});

describe("human node", () => {
  const recipe = workflow(
    {
      draft: { type: "agent", agent: "a.writer", next: "approve" },
      approve: {
        type: "human",
        prompt: "Publish this draft?",
        required_role: "editor",
        output_key: "decision",
        next: "publish",
      },
      publish: { type: "agent", agent: "a.publisher", inputs: { draft: "draft", ok: "decision.approved" } },
    },
    { policy: { max_retries: 0 } },
  );
  const agents = { "a.writer": () => "the draft", "a.publisher": (call: { prompt: string }) => `out: ${call.prompt}` };

  it("without an answer the run suspends: output.suspended, HUMAN_INPUT_REQUESTED, TURN_SUSPENDED, a save", async () => {
    const { output, records, calls, persisted } = await runRecipe(recipe, { agents });
    expect(calls.map((call) => call.node)).toEqual(["draft"]);
    expect(output.suspended).toEqual({ node: "approve", prompt: "Publish this draft?", required_role: "editor" });
    expect(output.outcome).toBeUndefined();
    expect(output.response).toBe("");
    expect(output.blackboard).toEqual({ draft: "the draft" });
    expect(kindsOf(records).slice(-3)).toEqual(["NODE_STARTED", "HUMAN_INPUT_REQUESTED", "TURN_SUSPENDED"]);
    expect(recordsOf(records, "HUMAN_INPUT_REQUESTED")).toEqual([
      { node: "approve", prompt: "Publish this draft?", required_role: "editor" },
    ]);
    expect(recordsOf(records, "TURN_SUSPENDED")).toEqual([{ node: "approve" }]);
    expect(kindsOf(records)).not.toContain("TURN_COMPLETED");
    expect(persisted).toEqual([
      { session_id: "s", turn_id: 1, blackboard: { draft: "the draft" }, checkOutputs: false },
    ]);
    expect(checkpointAt(records, "approve")).toEqual({ blackboard: { draft: "the draft" }, steps: 1, refinements: {} });
  });

  it("resumed from its checkpoint with an answer: the answer is written at output_key and the run goes on", async () => {
    const suspended = await runRecipe(recipe, { agents });
    const { output, records, calls } = await runRecipe(recipe, {
      agents,
      input: {
        resume: {
          at: "approve",
          checkpoint: checkpointAt(suspended.records, "approve"),
          answer: { node: "approve", answer: { approved: true }, user_id: "ana", role: "editor", timed_out: false },
        },
      },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    // The draft is not asked again: the run goes on from the human node.
    expect(calls.map((call) => call.node)).toEqual(["publish"]);
    expect(calls[0]?.inputs).toEqual({ draft: "the draft", ok: true });
    expect(output.blackboard).toEqual({
      draft: "the draft",
      decision: { approved: true },
      publish: "out: draft: the draft\nok: true",
    });
    expect(recordsOf(records, "NODE_STARTED").map((started) => [started.node, started.step])).toEqual([
      ["approve", 2],
      ["publish", 3],
    ]);
    expect(recordsOf(records, "NODE_COMPLETED")[0]).toMatchObject({
      node: "approve",
      kind: "human",
      output_key: "decision",
      output: { approved: true },
    });
    expect(kindsOf(records)).not.toContain("PREFLIGHT_CHECKED");
  });

  const timedOut = { node: "approve", answer: null, timed_out: true };

  it("a timed-out answer goes by timeout_route", async () => {
    const withRoute = workflow(
      {
        approve: { type: "human", prompt: "OK?", timeout_seconds: 60, timeout_route: "archive", next: "publish" },
        publish: { type: "agent", agent: "a.publisher" },
        archive: { type: "agent", agent: "a.archiver" },
      },
      { policy: { max_retries: 0 } },
    );
    const { output, calls, records } = await runRecipe(withRoute, {
      agents: { "a.publisher": () => "p", "a.archiver": () => "archived" },
      input: { resume: { at: "approve", checkpoint: { blackboard: {}, steps: 0, refinements: {} }, answer: timedOut } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(calls.map((call) => call.node)).toEqual(["archive"]);
    expect(output.blackboard).toEqual({ archive: "archived" });
    expect(recordsOf(records, "ROUTE_TAKEN")[0]).toEqual({
      from: "approve",
      to: "archive",
      reason: "nobody answered in time",
    });
  });

  it("a timed-out answer without timeout_route fails the run: human_timeout", async () => {
    const { output, calls } = await runRecipe(recipe, {
      agents,
      input: { resume: { at: "approve", checkpoint: { blackboard: {}, steps: 1, refinements: {} }, answer: timedOut } },
    });
    expect(calls).toEqual([]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "human_timeout", message: "human node 'approve': nobody answered in time" },
    });
  });

  it("an answer for another node is no answer: the run suspends again", async () => {
    const { output } = await runRecipe(recipe, {
      agents,
      input: {
        resume: {
          at: "approve",
          checkpoint: { blackboard: {}, steps: 1, refinements: {} },
          answer: { node: "draft", answer: true, timed_out: false },
        },
      },
    });
    expect(output.suspended?.node).toBe("approve");
  });

  describe("policy.human_in_the_loop: an approval after every agent node", () => {
    const approved = graph(
      { nodes: [agent("write", "a.writer"), agent("send", "a.sender")], edges: [edge("write", "send")] },
      { policy: { human_in_the_loop: true } },
    );
    const scripts = { "a.writer": () => "draft", "a.sender": () => "sent" };
    const answering = async (answer: unknown) => {
      const first = await runRecipe(approved, { agents: scripts });
      expect(first.output.suspended).toEqual({
        node: "write_approval",
        prompt: "Approve the result of 'write' (on the blackboard as 'write')?",
      });
      return runRecipe(approved, {
        agents: scripts,
        input: {
          resume: {
            at: "write_approval",
            checkpoint: checkpointAt(first.records, "write_approval"),
            answer: { node: "write_approval", answer, user_id: "ana", timed_out: false },
          },
        },
      });
    };

    it("approved: the run goes on to the next agent (and its own approval)", async () => {
      const { output, calls } = await answering(true);
      expect(calls.map((call) => call.node)).toEqual(["send"]);
      expect(output.suspended?.node).toBe("send_approval");
      expect(output.blackboard).toEqual({ write: "draft", write_approval: true, send: "sent" });
    });

    it("rejected (false, 'no', {approved: false}): Failed rejected, naming who", async () => {
      for (const answer of [false, "no", { approved: false }]) {
        const { output, calls } = await answering(answer);
        expect(calls).toEqual([]);
        expect(output.outcome).toEqual({
          status: "Failed",
          error: { code: "rejected", message: "'write_approval': rejected by ana" },
        });
      }
    });
  });
});

describe("council and logic steps", () => {
  it("council: runCouncil is given the voters, strategy and blackboard; its result is written at output_key", async () => {
    const recipe = workflow(
      {
        vote: {
          type: "council",
          voters: ["a.one", "a.two", "a.three"],
          strategy: "majority",
          output_key: "ballot",
          next: "act",
        },
        act: { type: "agent", agent: "a.actor", inputs: { decision: "ballot.decision" } },
      },
      { policy: { max_retries: 0 } },
    );
    const { output, councilCalls, calls, records } = await runRecipe(recipe, {
      council: (call) => ({
        decision: "ship",
        votes: Object.fromEntries(call.voters.map((voter) => [voter, "ship"])),
        failed: [],
      }),
      agents: { "a.actor": (call) => `doing ${String(call.inputs.decision)}` },
      input: { inputs: { question: "ship it?" } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(councilCalls).toEqual([
      {
        session_id: "s",
        turn_id: 1,
        node: "vote",
        voters: ["a.one", "a.two", "a.three"],
        strategy: "majority",
        inputs: { question: "ship it?" },
        prompt: "ship it?",
      },
    ]);
    expect(output.blackboard.ballot).toEqual({
      decision: "ship",
      votes: { "a.one": "ship", "a.two": "ship", "a.three": "ship" },
      failed: [],
    });
    expect(calls[0]?.inputs).toEqual({ decision: "ship" });
    expect(recordsOf(records, "NODE_COMPLETED")[0]).toMatchObject({
      node: "vote",
      kind: "council",
      output_key: "ballot",
    });
  });

  it("logic: runLogic runs the handler named by the step on the blackboard; the document's code is never run", async () => {
    const recipe = workflow(
      {
        count: { type: "agent", agent: "a.counter", next: "tally" },
        tally: { type: "logic", code: "globalThis.__recipeLogicRan = true; process.exit(1)", next: "report" },
        report: { type: "agent", agent: "a.reporter", inputs: { total: "tally" } },
      },
      { policy: { max_retries: 0 } },
      { logicHandlers: ["tally"] },
    );
    const { output, logicCalls, calls } = await runRecipe(recipe, {
      agents: { "a.counter": () => [1, 2, 3], "a.reporter": (call) => `total ${String(call.inputs.total)}` },
      logic: { tally: (call) => (call.blackboard.count as number[]).reduce((sum, n) => sum + n, 0) },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(logicCalls).toEqual([
      { session_id: "s", turn_id: 1, node: "tally", handler: "tally", blackboard: { count: [1, 2, 3] } },
    ]);
    expect(output.blackboard).toEqual({ count: [1, 2, 3], tally: 6, report: "total 6" });
    expect(calls.map((call) => call.node)).toEqual(["count", "report"]);
    expect((globalThis as Record<string, unknown>).__recipeLogicRan).toBeUndefined();
  });

  it("a handler that throws fails the node with the error's code", async () => {
    const recipe = workflow(
      { tally: { type: "logic", code: "x" } },
      { policy: { max_retries: 0 } },
      { logicHandlers: ["tally"] },
    );
    const { output, records } = await runRecipe(recipe, {
      logic: {
        tally: () => {
          throw Object.assign(new Error("bad rows"), { code: "bad_input" });
        },
      },
    });
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "bad_input", message: "node 'tally' failed after 1 attempt(s): bad rows" },
    });
    expect(recordsOf(records, "NODE_FAILED")).toEqual([
      { node: "tally", kind: "logic", code: "bad_input", message: "bad rows", attempt: 1, retrying: false },
    ]);
  });
});

describe("pre-flight constraints", () => {
  const recipe = (required: boolean) =>
    graph([agent("a", "a.x")], {
      requirements: [
        { variable: "data.rows", operator: "gt", value: 0, required, error_message: "the data has no rows" },
        { variable: "data.kind", operator: "in", value: ["csv", "tsv"] },
      ],
    });

  it("a failing required constraint fails the run preflight_failed with its error_message; no agent is called", async () => {
    const { output, calls, records } = await runRecipe(recipe(true), {
      agents: { "a.x": () => "ran" },
      input: { inputs: { data: { rows: 0, kind: "csv" } } },
    });
    expect(calls).toEqual([]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "preflight_failed", message: "the data has no rows" },
    });
    expect(recordsOf(records, "PREFLIGHT_CHECKED")).toEqual([
      {
        passed: false,
        failures: [{ variable: "data.rows", operator: "gt", message: "the data has no rows" }],
        warnings: [],
      },
    ]);
    expect(kindsOf(records)).not.toContain("NODE_STARTED");
    expect(kindsOf(records).at(-1)).toBe("TURN_COMPLETED");
  });

  it("constraints see the stored blackboard under the inputs", async () => {
    const { output, calls } = await runRecipe(recipe(true), {
      agents: { "a.x": () => "ran" },
      blackboard: { data: { rows: 5, kind: "csv" } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(calls).toHaveLength(1);
  });

  it("an optional constraint that fails is a STAGE_WARNING and the run goes on (PartialSuccess)", async () => {
    const { output, calls, records } = await runRecipe(recipe(false), {
      agents: { "a.x": () => "ran" },
      input: { inputs: { data: { rows: 0, kind: "csv" } } },
    });
    expect(calls).toHaveLength(1);
    const warning = { stage: "recipe", code: "constraint", message: "the data has no rows", subject: "data.rows" };
    expect(output.outcome).toEqual({ status: "PartialSuccess", warnings: [warning] });
    expect(recordsOf(records, "STAGE_WARNING")).toEqual([warning]);
    expect(recordsOf(records, "PREFLIGHT_CHECKED")[0]).toMatchObject({ passed: true, failures: [] });
    expect(output.blackboard.a).toBe("ran");
  });
});

describe("policy.max_retries", () => {
  const recipe = (maxRetries: number) =>
    graph([agent("flaky", "a.flaky"), agent("next", "a.next")], { policy: { max_retries: maxRetries } });
  const failingOnce = () => {
    let failed = false;
    return () => {
      if (failed) return "ok";
      failed = true;
      return new AgentScriptError("agent_timeout", "no answer in time");
    };
  };

  it("max_retries 1: a node failing once and then answering completes; NODE_FAILED retrying:true recorded", async () => {
    const { output, calls, records, log } = await runRecipe(recipe(1), {
      agents: { "a.flaky": failingOnce(), "a.next": () => "n" },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(output.blackboard).toEqual({ flaky: "ok", next: "n" });
    expect(calls.map((call) => [call.node, call.attempt])).toEqual([
      ["flaky", 1],
      ["flaky", 2],
      ["next", 1],
    ]);
    expect(log.slice(0, 4)).toEqual(["call:flaky", "fail:flaky", "call:flaky", "answer:flaky"]);
    expect(recordsOf(records, "NODE_FAILED")).toEqual([
      { node: "flaky", kind: "agent", code: "agent_timeout", message: "no answer in time", attempt: 1, retrying: true },
    ]);
    // The retry is the same visit: one NODE_STARTED, one step.
    expect(recordsOf(records, "NODE_STARTED").map((started) => started.node)).toEqual(["flaky", "next"]);
  });

  it("max_retries 0: the first failure fails the run", async () => {
    const { output, calls, records } = await runRecipe(recipe(0), {
      agents: { "a.flaky": failingOnce(), "a.next": () => "n" },
    });
    expect(calls.map((call) => call.node)).toEqual(["flaky"]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "agent_timeout", message: "node 'flaky' failed after 1 attempt(s): no answer in time" },
    });
    expect(recordsOf(records, "NODE_FAILED")).toEqual([
      {
        node: "flaky",
        kind: "agent",
        code: "agent_timeout",
        message: "no answer in time",
        attempt: 1,
        retrying: false,
      },
    ]);
  });

  it("retries are bounded: max_retries 2 and an agent that always fails is asked 3 times", async () => {
    const { output, calls, records } = await runRecipe(recipe(2), {
      agents: { "a.flaky": () => new Error("down") },
    });
    expect(calls.map((call) => call.attempt)).toEqual([1, 2, 3]);
    expect(recordsOf(records, "NODE_FAILED").map((failed) => [failed.attempt, failed.retrying])).toEqual([
      [1, true],
      [2, true],
      [3, false],
    ]);
    expect(output.outcome).toMatchObject({
      status: "Failed",
      error: { code: "agent_failed", message: "node 'flaky' failed after 3 attempt(s): down" },
    });
  });

  it("a retry's streams say which attempt they belong to", async () => {
    let attempts = 0;
    const { output, records } = await runRecipe(recipe(1), {
      agents: {
        "a.flaky": () =>
          ++attempts === 1
            ? reply({ streams: [{ name: "default", chunks: ["first"] }], fail: { code: "x", message: "lost" } })
            : reply({ streams: [{ name: "default", chunks: ["second"] }], output: "ok" }),
        "a.next": () => "n",
      },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(
      recordsOf(records, "STREAM_START")
        .filter((start) => start.stream_id === "flaky:default")
        .map((start) => start.attempt),
    ).toEqual([1, 2]);
  });

  // Once a bug: the retry's STREAM_START was swallowed (the failed attempt's stream was still open).
  it("a failed attempt's open streams are closed before the retry opens them again", async () => {
    let attempts = 0;
    const { records } = await runRecipe(recipe(1), {
      agents: {
        "a.flaky": () =>
          ++attempts === 1
            ? reply({
                streams: [{ name: "default", chunks: ["a", "b"], end: false }],
                fail: { code: "x", message: "lost" },
              })
            : reply({ streams: [{ name: "default", chunks: ["c"] }], output: "ok" }),
        "a.next": () => "n",
      },
    });
    const flaky = records.filter(
      (record) => "stream_id" in record.payload && record.payload.stream_id === "flaky:default",
    );
    expect(flaky.map((record) => record.kind)).toEqual([
      "STREAM_START",
      "STREAM_CHUNK",
      "STREAM_CHUNK",
      "STREAM_END",
      "STREAM_START",
      "STREAM_CHUNK",
      "STREAM_END",
    ]);
    expect(recordsOf(records, "STREAM_CHUNK").filter((chunk) => chunk.delta === "c")).toEqual([
      { stream_id: "flaky:default", index: 0, delta: "c" },
    ]);
  });
});

describe("policy.timeout_seconds", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const recipe = graph([agent("slow", "a.slow"), agent("after", "a.after")], { policy: { timeout_seconds: 60 } });

  it("the run's deadline (deadline_in_ms) passing mid-node fails it: timeout; the open call is stopped", async () => {
    vi.useFakeTimers();
    const running = runRecipe(recipe, {
      agents: {
        "a.slow": () => reply({ streams: [{ name: "default", chunks: ["thinking"], end: false }], hang: true }),
        "a.after": () => "never",
      },
      input: { deadline_in_ms: 5_000 },
    });
    await vi.advanceTimersByTimeAsync(4_999);
    await vi.advanceTimersByTimeAsync(1);
    const { output, calls, records, log } = await running;
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "timeout", message: "the run passed its deadline (policy timeout_seconds: 60)" },
    });
    expect(calls.map((call) => call.node)).toEqual(["slow"]);
    expect(log).toEqual(["call:slow", "stop:slow"]);
    // The stream the node left open is closed.
    expect(recordsOf(records, "STREAM_END")).toEqual([{ stream_id: "slow:default", chunks: 1 }]);
  });

  it("a run that ends before its deadline is not failed by it", async () => {
    const { output } = await runRecipe(recipe, {
      agents: { "a.slow": () => "s", "a.after": () => "a" },
      input: { deadline_in_ms: 60_000 },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
  });

  // Fixed: a run started without deadline_in_ms has the policy's whole timeout (it used to fail on the next tick).
  it("timeout_seconds without deadline_in_ms gives the run the policy's whole timeout", async () => {
    vi.useFakeTimers();
    const answer = deferred();
    const running = runRecipe(recipe, {
      agents: {
        "a.slow": async () => {
          await answer.promise;
          return "s";
        },
        "a.after": () => "a",
      },
    });
    // A second of a 60 s policy passes before the agent answers.
    await vi.advanceTimersByTimeAsync(1_000);
    answer.resolve();
    const { output } = await running;
    expect(output.outcome).toEqual({ status: "Complete" });
  });
});

describe("policy.execution_mode", () => {
  const fork = (mode: "parallel" | "sequential") =>
    graph(
      {
        nodes: [
          agent("plan", "a.plan"),
          agent("web", "a.web"),
          agent("papers", "a.papers"),
          agent("summary", "a.summary", { inputs_map: { web: "web", papers: "papers" } }),
        ],
        edges: [edge("plan", "web"), edge("plan", "papers"), edge("web", "summary"), edge("papers", "summary")],
      },
      { policy: { execution_mode: mode } },
    );

  it("parallel: both branches are asked before either answers (each answers only once both were asked)", async () => {
    const asked = { web: deferred(), papers: deferred() };
    const both = Promise.all([asked.web.promise, asked.papers.promise]);
    const { output, log, records } = await runRecipe(fork("parallel"), {
      agents: {
        "a.plan": () => "plan",
        "a.web": async () => {
          asked.web.resolve();
          await both;
          return "from the web";
        },
        "a.papers": async () => {
          asked.papers.resolve();
          await both;
          return "from papers";
        },
        "a.summary": (call) => `${String(call.inputs.web)} + ${String(call.inputs.papers)}`,
      },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(log.slice(0, 4)).toEqual(["call:plan", "answer:plan", "call:web", "call:papers"]);
    expect(new Set(log.slice(4, 6))).toEqual(new Set(["answer:web", "answer:papers"]));
    expect(log.slice(6)).toEqual(["call:summary", "answer:summary"]);
    expect(output.blackboard.summary).toBe("from the web + from papers");
    expect(recordsOf(records, "ROUTE_TAKEN")).toContainEqual({ from: "plan", to: "web, papers", reason: "fork" });
    expect(recordsOf(records, "ROUTE_TAKEN")).toContainEqual({
      from: "plan",
      to: "summary",
      reason: "every branch is done",
    });
  });

  it("sequential: the second branch starts only after the first answered", async () => {
    const { output, log } = await runRecipe(fork("sequential"), {
      agents: {
        "a.plan": () => "plan",
        "a.web": () => "w",
        "a.papers": () => "p",
        "a.summary": (call) => `${String(call.inputs.web)} + ${String(call.inputs.papers)}`,
      },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(log).toEqual([
      "call:plan",
      "answer:plan",
      "call:web",
      "answer:web",
      "call:papers",
      "answer:papers",
      "call:summary",
      "answer:summary",
    ]);
    expect(output.blackboard.summary).toBe("w + p");
  });

  it("parallel: a failing branch fails the run and the other branch's call is stopped", async () => {
    const { output, log } = await runRecipe(fork("parallel"), {
      agents: { "a.plan": () => "plan", "a.web": () => new Error("offline"), "a.papers": () => hang() },
    });
    expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "agent_failed" } });
    expect(log).toContain("stop:papers");
    expect(log).not.toContain("call:summary");
  });
});

describe("policy.max_steps", () => {
  it("a cycle (a router looping back) stops with Failed max_steps", async () => {
    const recipe = graph(
      {
        nodes: [
          agent("work", "a.worker", { output_key: "state" }),
          { type: "router", id: "again", input_key: "state", routes: { more: "work", done: "finish" } },
          agent("finish", "a.finish"),
        ],
        edges: [edge("work", "again")],
      },
      { policy: { max_steps: 5 } },
    );
    const { output, calls, records } = await runRecipe(recipe, {
      agents: { "a.worker": () => "more", "a.finish": () => "f" },
    });
    // work, again, work, again, work: five visits; the sixth is refused.
    expect(calls.map((call) => call.node)).toEqual(["work", "work", "work"]);
    expect(recordsOf(records, "NODE_STARTED").map((started) => started.step)).toEqual([1, 2, 3, 4, 5]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: {
        code: "max_steps",
        message: "the run visited 5 nodes (policy max_steps) and was stopped at 'again'",
      },
    });
  });
});

describe("cancellation", () => {
  it("turn.cancel mid-node: Cancelled, the call stopped, its open streams closed (STREAM_END)", async () => {
    const recipe = graph([agent("write", "a.writer"), agent("after", "a.after")]);
    const { output, records, log } = await runRecipe(recipe, {
      agents: {
        "a.writer": (_call, { send }) => {
          // Two streams opened and written, neither closed; then the client cancels, and no answer ever comes.
          const node = "write";
          send({ type: "node.stream.start", node, stream_id: "write:notes", content_type: "text/plain" });
          send({ type: "node.stream.chunk", node, stream_id: "write:notes", delta: "a" });
          send({ type: "node.stream.chunk", node, stream_id: "write:notes", delta: "b" });
          send({ type: "node.stream.start", node, stream_id: "write:default", content_type: "text/plain" });
          send({ type: "node.stream.chunk", node, stream_id: "write:default", delta: "draft" });
          send({ type: "turn.cancel", reason: "user pressed stop" });
          return hang();
        },
        "a.after": () => "never",
      },
    });
    expect(output.outcome).toEqual({ status: "Cancelled", reason: "user pressed stop" });
    expect(output.response).toBe("");
    expect(log).toEqual(["call:write", "stop:write"]);
    expect(recordsOf(records, "STREAM_END")).toEqual([
      { stream_id: "write:notes", chunks: 2 },
      { stream_id: "write:default", chunks: 1 },
    ]);
    expect(kindsOf(records).slice(-3)).toEqual(["STREAM_END", "STREAM_END", "TURN_COMPLETED"]);
    expect(recordsOf(records, "TURN_COMPLETED")[0]?.outcome).toEqual({
      status: "Cancelled",
      reason: "user pressed stop",
    });
  });
});

describe("streams", () => {
  it("STREAM_START/CHUNK/END with stream ids <node>:<name>, content types, chunk indexes per stream", async () => {
    const recipe = graph([agent("write", "a.writer"), agent("check", "a.checker")]);
    const { output, records } = await runRecipe(recipe, {
      agents: {
        "a.writer": () =>
          reply({
            streams: [
              { name: "thinking", content_type: "text/markdown", chunks: ["t0", "t1", "t2"] },
              { name: "default", chunks: ["d0", "d1"] },
            ],
            output: "written",
          }),
        "a.checker": () => reply({ streams: [{ name: "default", chunks: ["c0"] }], output: "checked" }),
      },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    const streamed = records.filter((record) => record.kind.startsWith("STREAM_"));
    expect(streamed).toEqual([
      { kind: "STREAM_START", payload: { stream_id: "write:thinking", content_type: "text/markdown", attempt: 1 } },
      { kind: "STREAM_CHUNK", payload: { stream_id: "write:thinking", index: 0, delta: "t0" } },
      { kind: "STREAM_CHUNK", payload: { stream_id: "write:thinking", index: 1, delta: "t1" } },
      { kind: "STREAM_CHUNK", payload: { stream_id: "write:thinking", index: 2, delta: "t2" } },
      { kind: "STREAM_END", payload: { stream_id: "write:thinking", chunks: 3 } },
      { kind: "STREAM_START", payload: { stream_id: "write:default", content_type: "text/plain", attempt: 1 } },
      { kind: "STREAM_CHUNK", payload: { stream_id: "write:default", index: 0, delta: "d0" } },
      { kind: "STREAM_CHUNK", payload: { stream_id: "write:default", index: 1, delta: "d1" } },
      { kind: "STREAM_END", payload: { stream_id: "write:default", chunks: 2 } },
      { kind: "STREAM_START", payload: { stream_id: "check:default", content_type: "text/plain", attempt: 1 } },
      { kind: "STREAM_CHUNK", payload: { stream_id: "check:default", index: 0, delta: "c0" } },
      { kind: "STREAM_END", payload: { stream_id: "check:default", chunks: 1 } },
    ]);
    // A node's streams come between its NODE_STARTED and its NODE_COMPLETED.
    expect(kindsOf(records).slice(0, 13)).toEqual([
      "PREFLIGHT_CHECKED",
      "NODE_STARTED",
      ...Array.from(streamed.slice(0, 9), (record) => record.kind),
      "NODE_COMPLETED",
      "ROUTE_TAKEN",
    ]);
  });

  it("interleaved streams keep their own chunk counts", async () => {
    const recipe = graph([agent("write", "a.writer")]);
    const { records } = await runRecipe(recipe, {
      agents: {
        "a.writer": (_call, { send }) => {
          const node = "write";
          send({ type: "node.stream.start", node, stream_id: "write:a", content_type: "text/plain" });
          send({ type: "node.stream.start", node, stream_id: "write:b", content_type: "text/plain" });
          send({ type: "node.stream.chunk", node, stream_id: "write:a", delta: "a0" });
          send({ type: "node.stream.chunk", node, stream_id: "write:b", delta: "b0" });
          send({ type: "node.stream.chunk", node, stream_id: "write:a", delta: "a1" });
          // A part of another node's stream, or of a stream never started, is not this node's.
          send({ type: "node.stream.chunk", node: "other", stream_id: "other:a", delta: "x" });
          send({ type: "node.stream.chunk", node, stream_id: "write:never", delta: "x" });
          send({ type: "node.stream.end", node, stream_id: "write:a" });
          send({ type: "node.stream.end", node, stream_id: "write:b" });
          return "done";
        },
      },
    });
    expect(
      recordsOf(records, "STREAM_CHUNK").map((chunk) => `${chunk.stream_id}#${chunk.index}=${chunk.delta}`),
    ).toEqual(["write:a#0=a0", "write:b#0=b0", "write:a#1=a1"]);
    expect(recordsOf(records, "STREAM_END")).toEqual([
      { stream_id: "write:a", chunks: 2 },
      { stream_id: "write:b", chunks: 1 },
    ]);
  });
});

describe("realistic recipes, from their files", () => {
  const FIXTURES = join(import.meta.dirname, "../fixtures/recipes");

  it("graph (YAML): classify, route, draft, judge and refine, ask a person, then send", async () => {
    const recipe = loadRecipeFile(join(FIXTURES, "graph-review.yaml"));
    let judged = 0;
    const agents = {
      "support.classifier": () => ({ category: "billing" }),
      "support.writer": (call: RecipeAgentCall) =>
        reply({
          streams: [{ name: "default", chunks: ["Dear customer, "] }],
          output: call.feedback ? "Dear customer, we refunded the second charge." : "Dear customer, noted.",
        }),
      "support.judge": () => (++judged === 1 ? { score: 5, critique: "say what we did" } : { score: 9, critique: "" }),
      "support.sender": (call: RecipeAgentCall) => `sent: ${String(call.inputs.reply)}`,
      "support.escalator": () => "escalated",
    };
    const inputs = { ticket: { text: "I was charged twice", priority: 3 } };
    const first = await runRecipe(recipe, { agents, input: { inputs, deadline_in_ms: 300_000 } });
    expect(first.calls.map((call) => call.node)).toEqual(["classify", "draft", "judge", "draft", "judge"]);
    expect(first.calls[1]).toMatchObject({
      inputs: { ticket: "I was charged twice", category: "billing" },
      system_prompt: "You answer support tickets politely and briefly.",
    });
    expect(first.calls[3]?.feedback).toBe("say what we did");
    expect(first.output.suspended).toEqual({
      node: "check",
      prompt: "Send this reply to an urgent ticket?",
      required_role: "support-lead",
    });
    expect(routes(first.records)).toEqual([
      "classify->route",
      "route->draft",
      "draft->judge",
      "judge->draft",
      "draft->judge",
      "judge->check",
    ]);

    const resumed = await runRecipe(recipe, {
      agents,
      input: {
        inputs,
        deadline_in_ms: 300_000,
        resume: {
          at: "check",
          checkpoint: checkpointAt(first.records, "check"),
          answer: { node: "check", answer: { ok: true }, user_id: "lee", role: "support-lead", timed_out: false },
        },
      },
    });
    expect(resumed.output.outcome).toEqual({ status: "Complete" });
    expect(resumed.calls.map((call) => call.node)).toEqual(["send"]);
    expect(resumed.output.blackboard).toMatchObject({
      triage: { category: "billing" },
      reply: "Dear customer, we refunded the second charge.",
      critique: "say what we did",
      approval: { ok: true },
      send: "sent: Dear customer, we refunded the second charge.",
    });
    // The refinement count travelled in the checkpoint.
    expect(checkpointAt(first.records, "check").refinements).toEqual({ judge: 1 });
  });

  it("graph (YAML): a pre-flight failure stops it before the classifier; an unknown category escalates", async () => {
    const recipe = loadRecipeFile(join(FIXTURES, "graph-review.yaml"));
    const empty = await runRecipe(recipe, {
      agents: {},
      input: { inputs: { ticket: { text: "", priority: 1 } }, deadline_in_ms: 300_000 },
    });
    expect(empty.output.outcome).toEqual({
      status: "Failed",
      error: { code: "preflight_failed", message: "the ticket has no text" },
    });
    expect(empty.calls).toEqual([]);
    const other = await runRecipe(recipe, {
      agents: { "support.classifier": () => ({ category: "legal" }), "support.escalator": () => "escalated" },
      // priority 7 is not in [1, 2, 3]: an optional constraint, so a warning.
      input: { inputs: { ticket: { text: "a subpoena", priority: 7 } }, deadline_in_ms: 300_000 },
    });
    expect(other.calls.map((call) => call.node)).toEqual(["classify", "escalate"]);
    expect(other.output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ code: "constraint", subject: "ticket.priority" }],
    });
  });

  it("workflow (JSON): agent by definition, logic handler, council, switch; no decision asks a person", async () => {
    const recipe = loadRecipeFile(join(FIXTURES, "workflow-release.json"), { logicHandlers: ["count"] });
    const scripts = (decision: string | null) => ({
      agents: {
        "docs.writer": (call: RecipeAgentCall) => `notes for ${(call.inputs.changes as string[]).join(", ")}`,
        "docs.publisher": () => "published",
      },
      logic: { count: (call: RecipeLogicCall) => String(call.blackboard.notes).length },
      council: (): RecipeCouncilResult => ({
        decision,
        votes: { "docs.reviewer": "ship", "eng.lead": decision ?? "hold" },
        failed: [],
      }),
      input: { inputs: { changes: ["a fix", "a feature"] }, deadline_in_ms: 600_000 },
    });
    const shipped = await runRecipe(recipe, scripts("ship"));
    expect(shipped.output.outcome).toEqual({ status: "Complete" });
    expect(shipped.calls.map((call) => [call.node, call.agent])).toEqual([
      ["write", "docs.writer"],
      ["publish", "docs.publisher"],
    ]);
    expect(shipped.calls[0]?.system_prompt).toBe("Write release notes.");
    expect(shipped.councilCalls[0]).toMatchObject({ voters: ["docs.reviewer", "eng.lead"], strategy: "majority" });
    expect(shipped.output.blackboard).toMatchObject({
      notes: "notes for a fix, a feature",
      count: 26,
      vote: { decision: "ship" },
      publish: "published",
    });
    expect((globalThis as Record<string, unknown>).__fixtureCodeRan).toBeUndefined();
    const undecided = await runRecipe(recipe, scripts(null));
    expect(undecided.output.suspended).toEqual({ node: "ask", prompt: "The council could not decide: publish?" });
    expect(routes(undecided.records)).toContain("decide->ask");
  });
});

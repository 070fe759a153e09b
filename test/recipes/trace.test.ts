/**
 * The SimulationTrace of a recipe run, built from its stored events. The
 * event lists copy the shapes of real runs (`conclave events --json` of
 * recipes/writer-judge.yaml and recipes/approval.yaml against the recipes'
 * agents), trimmed of stream chunks only where a test says so.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { EngineEvent, EventBody } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { SimulationTrace, simulationTraceJsonSchema } from "../../src/contracts/trace.ts";
import { isConclaveError } from "../../src/errors.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { describeStep, simulationTrace } from "../../src/recipes/trace.ts";

const documentOf = (file: string) => parseRecipeText(readFileSync(file, "utf8"), file) as JsonObject;

/** A turn's log: the bodies, numbered and timed as the writer does. */
function log(session: string, bodies: EventBody[]): EngineEvent[] {
  return bodies.map(
    (body, seq) =>
      ({ session_id: session, turn_id: 1, seq, ts_monotonic: 1_795_420_585_000 + seq * 5, ...body }) as EngineEvent,
  );
}

const usage = { prompt_tokens: 0, completion_tokens: 0, by_actor: {} };
const started = (document: JsonObject, inputs: JsonObject, extra: Partial<JsonObject> = {}): EventBody => ({
  kind: "RECIPE_STARTED",
  payload: {
    recipe: String((document.metadata as JsonObject).name),
    shape: "workflow" in document ? "workflow" : "graph",
    document,
    inputs,
    execution_mode: "sequential",
    provenance: {},
    ...extra,
  },
});
const stream = (id: string, deltas: string[]): EventBody[] => [
  { kind: "STREAM_START", payload: { stream_id: id, content_type: "text/plain", attempt: 1 } },
  ...deltas.map((delta, index): EventBody => ({ kind: "STREAM_CHUNK", payload: { stream_id: id, index, delta } })),
  { kind: "STREAM_END", payload: { stream_id: id, chunks: deltas.length } },
];

const writerJudge = documentOf("recipes/writer-judge.yaml");
const draft1 = { text: "tides: an overview." };
const draft2 = { text: "tides: an overview. Details: what it is, why it matters, and one example." };
const critique1 = "Too thin: add details and one example.";
const published = { status: "published", channel: "blog", words: 13 };
const finalBoard = { topic: "tides", draft: draft2, review_feedback: critique1, published };

/** recipes/writer-judge.yaml run with {"topic": "tides"}: refined once, then published. */
const writerJudgeRun = (): EventBody[] => [
  { kind: "TURN_STARTED", payload: { user_input: "run writer-judge", turn_id: 1 } },
  started(writerJudge, { topic: "tides" }, { timeout_seconds: 120, deadline_at: 1_795_420_705_000 }),
  { kind: "PREFLIGHT_CHECKED", payload: { passed: true, failures: [], warnings: [] } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "write",
      kind: "agent",
      step: 1,
      attempt: 1,
      checkpoint: { blackboard: { topic: "tides" }, steps: 0, refinements: {} },
    },
  },
  ...stream("write:default", ["tides: ", "an ", "overview."]),
  {
    kind: "NODE_COMPLETED",
    payload: {
      node: "write",
      kind: "agent",
      output_key: "draft",
      output: draft1,
      elapsed_ms: 2.425,
      agent: "content.writer",
      worker: "local:6870",
    },
  },
  { kind: "ROUTE_TAKEN", payload: { from: "write", to: "review", reason: "edge" } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "review",
      kind: "evaluator",
      step: 2,
      attempt: 1,
      checkpoint: { blackboard: { topic: "tides", draft: draft1 }, steps: 1, refinements: {} },
    },
  },
  {
    kind: "NODE_COMPLETED",
    payload: {
      node: "review",
      kind: "evaluator",
      output: { score: 0.4, critique: critique1 },
      elapsed_ms: 1.944,
      agent: "content.judge",
      worker: "local:6870",
    },
  },
  {
    kind: "EVALUATION_SCORED",
    payload: { node: "review", score: 0.4, passed: false, refinement: 0, critique: critique1 },
  },
  { kind: "ROUTE_TAKEN", payload: { from: "review", to: "write", reason: "below the pass threshold: refine" } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "write",
      kind: "agent",
      step: 3,
      attempt: 1,
      checkpoint: {
        blackboard: { topic: "tides", draft: draft1, review_feedback: critique1 },
        steps: 2,
        refinements: { review: 1 },
      },
    },
  },
  ...stream("write:default", ["tides: ", "an ", "overview. ", "Details: ", "what ", "it ", "is."]),
  {
    kind: "NODE_COMPLETED",
    payload: {
      node: "write",
      kind: "agent",
      output_key: "draft",
      output: draft2,
      elapsed_ms: 5.462,
      agent: "content.writer",
      worker: "local:6870",
    },
  },
  { kind: "ROUTE_TAKEN", payload: { from: "write", to: "review", reason: "edge" } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "review",
      kind: "evaluator",
      step: 4,
      attempt: 1,
      checkpoint: {
        blackboard: { topic: "tides", draft: draft2, review_feedback: critique1 },
        steps: 3,
        refinements: { review: 1 },
      },
    },
  },
  {
    kind: "NODE_COMPLETED",
    payload: {
      node: "review",
      kind: "evaluator",
      output: { score: 0.9, critique: "Clear, with details and an example." },
      elapsed_ms: 1.502,
      agent: "content.judge",
      worker: "local:6870",
    },
  },
  {
    kind: "EVALUATION_SCORED",
    payload: {
      node: "review",
      score: 0.9,
      passed: true,
      refinement: 1,
      critique: "Clear, with details and an example.",
    },
  },
  { kind: "ROUTE_TAKEN", payload: { from: "review", to: "publish", reason: "passed" } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "publish",
      kind: "agent",
      step: 5,
      attempt: 1,
      checkpoint: {
        blackboard: { topic: "tides", draft: draft2, review_feedback: critique1 },
        steps: 4,
        refinements: { review: 1 },
      },
    },
  },
  {
    kind: "NODE_COMPLETED",
    payload: {
      node: "publish",
      kind: "agent",
      output_key: "published",
      output: published,
      elapsed_ms: 2.264,
      agent: "ops.publisher",
      worker: "local:6870",
    },
  },
  { kind: "ROUTE_TAKEN", payload: { from: "publish", to: "end", reason: "no edge" } },
  {
    kind: "TURN_COMPLETED",
    payload: {
      total_time_ms: 235.4,
      response: JSON.stringify(finalBoard),
      outcome: { status: "Complete" },
      usage,
      output: finalBoard,
    },
  },
];

/** The same run as a log without checkpoints: the blackboard is replayed from the events alone. */
const withoutCheckpoints = (bodies: EventBody[]): EventBody[] =>
  bodies.map((body) => {
    if (body.kind !== "NODE_STARTED" && body.kind !== "TURN_COMPLETED") return body;
    const { checkpoint: _checkpoint, output: _output, ...payload } = body.payload as Record<string, unknown>;
    return { ...body, payload } as EventBody;
  });

const approval = documentOf("recipes/approval.yaml");
const approvalDraft = { text: "our API: an overview." };

/** recipes/approval.yaml run with {"topic": "our API"}, up to its suspension at 'approve'. */
const approvalUntilSuspended = (): EventBody[] => [
  { kind: "TURN_STARTED", payload: { user_input: "run approval", turn_id: 1 } },
  started(approval, { topic: "our API" }),
  { kind: "PREFLIGHT_CHECKED", payload: { passed: true, failures: [], warnings: [] } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "draft",
      kind: "agent",
      step: 1,
      attempt: 1,
      checkpoint: { blackboard: { topic: "our API" }, steps: 0, refinements: {} },
    },
  },
  ...stream("draft:default", ["our ", "API: ", "an ", "overview."]),
  {
    kind: "NODE_COMPLETED",
    payload: {
      node: "draft",
      kind: "agent",
      output_key: "draft",
      output: approvalDraft,
      elapsed_ms: 1.027,
      agent: "content.writer",
      worker: "local:6870",
    },
  },
  { kind: "ROUTE_TAKEN", payload: { from: "draft", to: "approve", reason: "edge" } },
  {
    kind: "NODE_STARTED",
    payload: {
      node: "approve",
      kind: "human",
      step: 2,
      attempt: 1,
      checkpoint: { blackboard: { topic: "our API", draft: approvalDraft }, steps: 1, refinements: {} },
    },
  },
  {
    kind: "HUMAN_INPUT_REQUESTED",
    payload: { node: "approve", prompt: "Publish this draft?", required_role: "editor", expires_at: 1_795_424_069_389 },
  },
  { kind: "TURN_SUSPENDED", payload: { node: "approve", expires_at: 1_795_424_069_389 } },
];

/** What `conclave resume 1 --user-id ana --role editor --input '{"approved": true}'` adds to it. */
const approvalResumed = (): EventBody[] => {
  const board = { topic: "our API", draft: approvalDraft, approve: { approved: true } };
  const output = { ...board, publish: { status: "published", channel: "blog", words: 4 } };
  return [
    {
      kind: "HUMAN_INPUT_RECEIVED",
      payload: { node: "approve", answer: { approved: true }, user_id: "ana", role: "editor", timed_out: false },
    },
    {
      kind: "NODE_STARTED",
      payload: {
        node: "approve",
        kind: "human",
        step: 2,
        attempt: 1,
        checkpoint: { blackboard: { topic: "our API", draft: approvalDraft }, steps: 1, refinements: {} },
      },
    },
    {
      kind: "NODE_COMPLETED",
      payload: { node: "approve", kind: "human", output_key: "approve", output: { approved: true }, elapsed_ms: 0 },
    },
    { kind: "ROUTE_TAKEN", payload: { from: "approve", to: "decide", reason: "edge" } },
    {
      kind: "NODE_STARTED",
      payload: {
        node: "decide",
        kind: "switch",
        step: 3,
        attempt: 1,
        checkpoint: { blackboard: board, steps: 2, refinements: {} },
      },
    },
    { kind: "ROUTE_TAKEN", payload: { from: "decide", to: "publish", reason: "case approve.approved == true held" } },
    {
      kind: "NODE_STARTED",
      payload: {
        node: "publish",
        kind: "agent",
        step: 4,
        attempt: 1,
        checkpoint: { blackboard: board, steps: 3, refinements: {} },
      },
    },
    {
      kind: "NODE_COMPLETED",
      payload: {
        node: "publish",
        kind: "agent",
        output_key: "publish",
        output: output.publish,
        elapsed_ms: 1.721,
        agent: "ops.publisher",
        worker: "local:6870",
      },
    },
    { kind: "ROUTE_TAKEN", payload: { from: "publish", to: "end", reason: "no edge" } },
    {
      kind: "TURN_COMPLETED",
      payload: {
        total_time_ms: 19.1,
        response: JSON.stringify(output),
        outcome: { status: "Complete" },
        usage,
        output,
      },
    },
  ];
};

const STEP_KINDS = new Set([
  "RECIPE_STARTED",
  "PREFLIGHT_CHECKED",
  "NODE_STARTED",
  "NODE_COMPLETED",
  "NODE_FAILED",
  "ROUTE_TAKEN",
  "EVALUATION_SCORED",
  "HUMAN_INPUT_REQUESTED",
  "TURN_SUSPENDED",
  "HUMAN_INPUT_RECEIVED",
  "TURN_COMPLETED",
]);

describe("simulationTrace", () => {
  it("has one step per state transition, numbered from 1, and no stream or TURN_STARTED steps", () => {
    const events = log("d-wj", writerJudgeRun());
    const trace = simulationTrace(events);
    expect(SimulationTrace.parse(trace)).toEqual(trace);
    expect(trace).toMatchObject({
      session_id: "d-wj",
      turn_id: 1,
      recipe: "writer-judge",
      provenance: {},
      status: "completed",
      outcome: { status: "Complete" },
    });
    expect(trace.version).toBeUndefined();
    expect(trace.steps.map((step) => step.kind)).toEqual(
      events.filter((event) => STEP_KINDS.has(event.kind)).map((event) => event.kind),
    );
    expect(trace.steps.map((step) => step.step)).toEqual(trace.steps.map((_, index) => index + 1));
    expect(trace.steps.map((step) => step.ts)).toEqual(
      events.filter((event) => STEP_KINDS.has(event.kind)).map((event) => event.ts_monotonic),
    );
    expect(trace.steps[0]).toMatchObject({
      node: null,
      kind: "RECIPE_STARTED",
      action: "seed the blackboard with the inputs",
      observation: { topic: "tides" },
      snapshot: { topic: "tides" },
    });
    expect(trace.steps.at(-1)).toMatchObject({
      node: null,
      kind: "TURN_COMPLETED",
      action: "end: Complete",
      snapshot: finalBoard,
    });
  });

  it("says what each node did and why: agent calls, routes, the judge's scores against its threshold", () => {
    const { steps } = simulationTrace(log("d-wj", writerJudgeRun()));
    const of = (kind: string, node: string) => steps.filter((step) => step.kind === kind && step.node === node);
    expect(of("NODE_STARTED", "write")[0]).toMatchObject({
      action: "call agent content.writer",
      thought: "agent node 'write', step 1 of the run",
      observation: null,
    });
    expect(of("NODE_STARTED", "review")[0]?.action).toBe("ask judge content.judge to score 'draft' (pass at 0.8)");
    expect(of("NODE_COMPLETED", "write")[0]).toMatchObject({
      thought: "agent content.writer answered on local:6870 in 2 ms",
      action: "write it to 'draft'",
      observation: draft1,
    });
    expect(of("NODE_COMPLETED", "review")[0]).toMatchObject({
      action: "take the verdict",
      observation: { score: 0.4, critique: critique1 },
    });
    expect(of("NODE_STARTED", "write")[1]).toMatchObject({
      action: "call agent content.writer",
      thought: "agent node 'write', step 3 of the run, its prompt carrying the critique in 'review_feedback'",
    });
    expect(of("ROUTE_TAKEN", "review").map((step) => [step.action, step.thought])).toEqual([
      ["route → write", "below the pass threshold: refine"],
      ["route → publish", "passed"],
    ]);
    expect(of("EVALUATION_SCORED", "review").map((step) => [step.action, step.thought])).toEqual([
      ["score 0.4 < 0.8: refine", critique1],
      ["score 0.9 ≥ 0.8: pass", "Clear, with details and an example."],
    ]);
    expect(of("EVALUATION_SCORED", "review")[0]?.observation).toEqual({
      score: 0.4,
      passed: false,
      refinement: 0,
      critique: critique1,
    });
  });

  it("snapshots the blackboard at each step: outputs at their keys, the critique at the feedback variable", () => {
    const { steps } = simulationTrace(log("d-wj", writerJudgeRun()));
    const snapshots = steps.map((step) => [step.step, step.kind, step.node, step.snapshot]);
    expect(snapshots.slice(0, 6)).toEqual([
      [1, "RECIPE_STARTED", null, { topic: "tides" }],
      [2, "PREFLIGHT_CHECKED", null, { topic: "tides" }],
      [3, "NODE_STARTED", "write", { topic: "tides" }],
      [4, "NODE_COMPLETED", "write", { topic: "tides", draft: draft1 }],
      [5, "ROUTE_TAKEN", "write", { topic: "tides", draft: draft1 }],
      [6, "NODE_STARTED", "review", { topic: "tides", draft: draft1 }],
    ]);
    const scored = steps.find((step) => step.kind === "EVALUATION_SCORED");
    expect(scored?.snapshot).toEqual({ topic: "tides", draft: draft1, review_feedback: critique1 });
    const rewritten = steps.filter((step) => step.kind === "NODE_COMPLETED" && step.node === "write")[1];
    expect(rewritten?.snapshot).toEqual({ topic: "tides", draft: draft2, review_feedback: critique1 });
    const publishedStep = steps.find((step) => step.kind === "NODE_COMPLETED" && step.node === "publish");
    expect(publishedStep?.snapshot).toEqual(finalBoard);
  });

  it("replays the same snapshots from the events alone when no NODE_STARTED carries a checkpoint", () => {
    const full = simulationTrace(log("d-wj", writerJudgeRun()));
    const replayed = simulationTrace(log("d-wj", withoutCheckpoints(writerJudgeRun())));
    expect(replayed.steps.map((step) => step.snapshot)).toEqual(full.steps.map((step) => step.snapshot));
  });

  it("takes a NODE_STARTED's checkpoint as the ground truth over what it replayed", () => {
    const bodies = writerJudgeRun();
    const publishStart = bodies.findIndex((body) => body.kind === "NODE_STARTED" && body.payload.node === "publish");
    const truth = { topic: "tides", draft: draft2, review_feedback: critique1, seen_only_here: 1 };
    bodies[publishStart] = {
      kind: "NODE_STARTED",
      payload: {
        node: "publish",
        kind: "agent",
        step: 5,
        attempt: 1,
        checkpoint: { blackboard: truth, steps: 4, refinements: {} },
      },
    };
    const { steps } = simulationTrace(log("d-wj", bodies));
    const index = steps.findIndex((step) => step.kind === "NODE_STARTED" && step.node === "publish");
    expect(steps[index]?.snapshot).toEqual(truth);
    expect(steps[index + 1]?.snapshot).toEqual({ ...truth, published });
  });

  it("is suspended at a human node, with the request and the suspension as steps", () => {
    const trace = simulationTrace(log("d-ap", approvalUntilSuspended()));
    expect(trace.status).toBe("suspended");
    expect(trace.outcome).toBeUndefined();
    expect(trace.steps.slice(-3).map((step) => [step.kind, step.node, step.action, step.thought])).toEqual([
      [
        "NODE_STARTED",
        "approve",
        "wait for a person's answer in the role 'editor'",
        "human node 'approve', step 2 of the run",
      ],
      ["HUMAN_INPUT_REQUESTED", "approve", "ask a person in the role 'editor'", "Publish this draft?"],
      [
        "TURN_SUSPENDED",
        "approve",
        "suspend for a person",
        "the run waits for an answer, durably: no process holds it",
      ],
    ]);
    expect(trace.steps.at(-1)).toMatchObject({
      observation: { expires_at: 1_795_424_069_389 },
      snapshot: { topic: "our API", draft: approvalDraft },
    });
  });

  it("after an answer: who answered in which role, the answer on the blackboard at the human node's key, the end", () => {
    const trace = simulationTrace(log("d-ap", [...approvalUntilSuspended(), ...approvalResumed()]));
    expect(trace.status).toBe("completed");
    expect(trace.outcome).toEqual({ status: "Complete" });
    const received = trace.steps.findIndex((step) => step.kind === "HUMAN_INPUT_RECEIVED");
    expect(trace.steps[received]).toMatchObject({
      node: "approve",
      thought: "ana answered as editor",
      action: "resume with the answer",
      observation: { approved: true },
      // On the blackboard once the human node takes it (its NODE_COMPLETED), as in the run.
      snapshot: { topic: "our API", draft: approvalDraft },
    });
    expect(trace.steps[received + 1]).toMatchObject({
      kind: "NODE_STARTED",
      node: "approve",
      action: "take the answer",
    });
    const answered = trace.steps.find((step) => step.kind === "NODE_COMPLETED" && step.node === "approve");
    expect(answered).toMatchObject({
      thought: "the person's answer",
      action: "write it to 'approve'",
      snapshot: { topic: "our API", draft: approvalDraft, approve: { approved: true } },
    });
    expect(trace.steps.find((step) => step.node === "decide" && step.kind === "NODE_STARTED")?.action).toBe(
      "test its cases in order",
    );
    expect(trace.steps.find((step) => step.node === "decide" && step.kind === "ROUTE_TAKEN")).toMatchObject({
      action: "route → publish",
      thought: "case approve.approved == true held",
    });
    expect(trace.steps.at(-1)?.snapshot).toMatchObject({
      approve: { approved: true },
      publish: { status: "published" },
    });
  });

  it("a wait nobody answered in time", () => {
    const trace = simulationTrace(
      log("d-ap", [
        ...approvalUntilSuspended(),
        { kind: "HUMAN_INPUT_RECEIVED", payload: { node: "approve", answer: null, timed_out: true } },
        {
          kind: "NODE_STARTED",
          payload: {
            node: "approve",
            kind: "human",
            step: 2,
            attempt: 1,
            checkpoint: { blackboard: { topic: "our API", draft: approvalDraft }, steps: 1, refinements: {} },
          },
        },
        { kind: "ROUTE_TAKEN", payload: { from: "approve", to: "archive", reason: "nobody answered in time" } },
        { kind: "NODE_STARTED", payload: { node: "archive", kind: "agent", step: 3, attempt: 1 } },
      ]),
    );
    expect(trace.status).toBe("running");
    expect(trace.steps.slice(-4).map((step) => [step.kind, step.node, step.action, step.thought])).toEqual([
      ["HUMAN_INPUT_RECEIVED", "approve", "resume without an answer", "nobody answered in time"],
      ["NODE_STARTED", "approve", "go on without an answer", "human node 'approve', step 2 of the run"],
      ["ROUTE_TAKEN", "approve", "route → archive", "nobody answered in time"],
      ["NODE_STARTED", "archive", "call agent ops.archiver", "agent node 'archive', step 3 of the run"],
    ]);
    expect(trace.steps.at(-4)?.observation).toEqual({ timed_out: true });
  });

  it("a failed attempt retried, then a failed run: the codes, messages and outcome", () => {
    const bodies: EventBody[] = [
      ...approvalUntilSuspended().slice(0, 4),
      {
        kind: "NODE_FAILED",
        payload: {
          node: "draft",
          kind: "agent",
          code: "agent_failed",
          message: "the model is down",
          attempt: 1,
          retrying: true,
        },
      },
      { kind: "NODE_STARTED", payload: { node: "draft", kind: "agent", step: 1, attempt: 2 } },
      {
        kind: "NODE_FAILED",
        payload: {
          node: "draft",
          kind: "agent",
          code: "agent_failed",
          message: "the model is down",
          attempt: 2,
          retrying: false,
        },
      },
      {
        kind: "TURN_COMPLETED",
        payload: {
          total_time_ms: 40,
          response: "",
          outcome: { status: "Failed", error: { code: "agent_failed", message: "node 'draft': the model is down" } },
          usage,
        },
      },
    ];
    const trace = simulationTrace(log("d-ap", bodies));
    expect(trace.steps.slice(3).map((step) => [step.kind, step.action, step.thought])).toEqual([
      ["NODE_FAILED", "try again (attempt 2, policy.max_retries)", "attempt 1 failed: agent_failed"],
      ["NODE_STARTED", "call agent content.writer (attempt 2)", "agent node 'draft', step 1 of the run"],
      ["NODE_FAILED", "fail the run", "attempt 2 failed: agent_failed"],
      ["TURN_COMPLETED", "end: Failed", "agent_failed: node 'draft': the model is down"],
    ]);
    expect(trace.steps[3]?.observation).toEqual({ code: "agent_failed", message: "the model is down" });
    expect(trace.status).toBe("completed");
    expect(trace.outcome).toMatchObject({ status: "Failed" });
    // No output on a failed end: the last blackboard seen stands.
    expect(trace.steps.at(-1)?.snapshot).toEqual({ topic: "our API" });
  });

  it("a failed pre-flight check names the constraint", () => {
    const bodies: EventBody[] = [
      started(writerJudge, { topic: "" }),
      {
        kind: "PREFLIGHT_CHECKED",
        payload: {
          passed: false,
          failures: [{ variable: "topic", operator: "neq", message: 'topic must not equal ""' }],
          warnings: [],
        },
      },
    ];
    const step = simulationTrace(log("pre", bodies)).steps[1];
    expect(step).toMatchObject({ node: null, action: "stop: a required constraint failed" });
    expect(step?.thought).toContain('topic must not equal ""');
  });

  it("writes dotted output keys into nested objects, and carries version and provenance", () => {
    const document = {
      apiVersion: "coreason.ai/v2",
      kind: "Recipe",
      metadata: { name: "nested", version: "2.1", generated_by: "planner-model", confidence_score: 0.7 },
      topology: {
        entry_point: "sum",
        nodes: [{ type: "agent", id: "sum", agent_ref: "research.summarizer", output_key: "data.summary" }],
      },
    };
    const bodies: EventBody[] = [
      started(
        document,
        { data: { rows: 3 } },
        {
          version: "2.1",
          provenance: { generated_by: "planner-model", confidence_score: 0.7 },
        },
      ),
      { kind: "NODE_STARTED", payload: { node: "sum", kind: "agent", step: 1, attempt: 1 } },
      {
        kind: "NODE_COMPLETED",
        payload: {
          node: "sum",
          kind: "agent",
          output_key: "data.summary",
          output: "three rows",
          elapsed_ms: 3,
          agent: "research.summarizer",
        },
      },
    ];
    const trace = simulationTrace(log("nested", bodies));
    expect(trace).toMatchObject({
      recipe: "nested",
      version: "2.1",
      provenance: { generated_by: "planner-model", confidence_score: 0.7 },
      status: "running",
    });
    expect(trace.steps.at(-1)?.snapshot).toEqual({ data: { rows: 3, summary: "three rows" } });
    expect(trace.steps[1]?.action).toBe("call agent research.summarizer");
  });

  it("from the events alone when the recipe document cannot be loaded here", () => {
    const bodies = writerJudgeRun().map((body) =>
      body.kind === "RECIPE_STARTED" ? ({ ...body, payload: { ...body.payload, document: {} } } as EventBody) : body,
    );
    const trace = simulationTrace(log("d-wj", bodies));
    expect(trace.steps[2]?.action).toBe("start the agent node");
    expect(trace.steps.find((step) => step.kind === "EVALUATION_SCORED")?.action).toBe(
      "score 0.4: below the threshold",
    );
    expect(trace.steps.at(-1)?.snapshot).toEqual(finalBoard);
  });

  it("refuses a turn that is not a recipe run with not_found", () => {
    const events = log("chat", [
      { kind: "TURN_STARTED", payload: { user_input: "hello", turn_id: 1 } },
      {
        kind: "TURN_COMPLETED",
        payload: { total_time_ms: 9, response: "hi", outcome: { status: "Complete" }, usage },
      },
    ]);
    let thrown: unknown;
    try {
      simulationTrace(events);
    } catch (error) {
      thrown = error;
    }
    expect(isConclaveError(thrown) && thrown.code).toBe("not_found");
    expect((thrown as Error).message).toBe("turn chat/1 is not a recipe run");
    expect(() => simulationTrace([])).toThrow("the turn is not a recipe run");
  });
});

describe("describeStep and the JSON Schema", () => {
  it("prints one line per step: number, node, action, why, and what came of it, shortened", () => {
    const { steps } = simulationTrace(log("d-wj", writerJudgeRun()));
    expect(describeStep(steps[2]!)).toBe(
      "#3 write  call agent content.writer  (agent node 'write', step 1 of the run)",
    );
    expect(describeStep(steps[3]!)).toBe(
      `#4 write  write it to 'draft'  (agent content.writer answered on local:6870 in 2 ms) → {"text":"tides: an overview."}`,
    );
    expect(describeStep(steps[0]!)).toMatch(/^#1 {2}seed the blackboard with the inputs/);
    const long = describeStep({ ...steps[3]!, observation: "x".repeat(500) });
    expect(long.length).toBeLessThan(400);
    expect(long.endsWith("…")).toBe(true);
  });

  it("the SimulationTrace's JSON Schema describes its steps", () => {
    const schema = simulationTraceJsonSchema() as {
      type: string;
      required: string[];
      properties: { steps: { items: { required: string[] } }; status: { enum: string[] } };
    };
    expect(schema.type).toBe("object");
    expect(schema.required).toEqual(
      expect.arrayContaining(["session_id", "turn_id", "recipe", "provenance", "status", "steps"]),
    );
    expect(schema.properties.status.enum).toEqual(["running", "suspended", "completed"]);
    expect(schema.properties.steps.items.required).toEqual(
      expect.arrayContaining(["step", "node", "kind", "thought", "action", "snapshot", "ts"]),
    );
  });
});

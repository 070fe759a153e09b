/**
 * The standard trace of a recipe run (`SimulationTrace`): one
 * step per state transition, each with the `thought` behind it, the
 * `action` taken, what was `observed`, and a `snapshot` of the blackboard at
 * that moment. Built from the turn's durable event log, so it is the same
 * after restarts, takeovers and suspensions.
 */
import type { EngineEvent } from "../contracts/events.ts";
import type { JsonObject } from "../contracts/recipeRun.ts";
import type { SimulationStep, SimulationTrace } from "../contracts/trace.ts";
import type { TurnOutcome } from "../contracts/turn.ts";
import { ConclaveError } from "../errors.ts";
import { loadRecipe } from "./load.ts";
import { readPath, writePath } from "./paths.ts";
import type { RecipeNode } from "./recipe.ts";

/** At most `max` characters of a value, as text (JSON unless it is a string). */
const short = (value: unknown, max = 120): string => {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/** `value` at `path` of `blackboard`, or the blackboard unchanged when the log holds a path it cannot write. */
const written = (blackboard: JsonObject, path: string, value: unknown): JsonObject => {
  try {
    return writePath(blackboard, path, value);
  } catch {
    return blackboard;
  }
};

/**
 * The run's nodes by id, from the document its RECIPE_STARTED carries: what
 * each node calls and how an evaluator decides. Empty when the document
 * cannot be loaded here (then the steps say less, from the events alone).
 */
function nodesOf(document: JsonObject): Map<string, RecipeNode> {
  const steps = (document.workflow as { steps?: Record<string, { type?: unknown }> } | undefined)?.steps;
  const logicSteps =
    typeof steps === "object" && steps !== null
      ? Object.entries(steps).flatMap(([id, step]) => (step?.type === "logic" ? [id] : []))
      : [];
  try {
    const recipe = loadRecipe(document, { forRun: false, logicHandlers: logicSteps });
    return new Map(recipe.nodes.map((node) => [node.id, node]));
  } catch {
    return new Map();
  }
}

/** What a node does when it starts, as an action. */
function startAction(node: RecipeNode | undefined, kind: string): string {
  switch (node?.kind) {
    case "agent":
      return `call agent ${node.agent}`;
    case "evaluator":
      return `ask judge ${node.judge} to score '${node.target_variable}' (pass at ${node.pass_threshold})`;
    case "router":
      return `read '${node.input_key}' to pick a route`;
    case "switch":
      return "test its cases in order";
    case "human":
      return `wait for a person's answer${node.required_role ? ` in the role '${node.required_role}'` : ""}`;
    case "council":
      return `ask the council ${node.voters.join(", ")} (${node.strategy})`;
    case "logic":
      return `run the handler '${node.handler}'`;
    default:
      return `start the ${kind} node`;
  }
}

/**
 * The feedback variables an agent node's next prompt carries (its
 * evaluators' critiques on the blackboard, as the machine's `feedbackFor`
 * reads them).
 */
function feedbackOf(nodes: Map<string, RecipeNode>, nodeId: string, blackboard: JsonObject): string[] {
  return [...nodes.values()].flatMap((node) => {
    if (node.kind !== "evaluator" || node.fail_route !== nodeId) return [];
    const { value } = readPath(blackboard, node.feedback_variable);
    return typeof value === "string" && value.length > 0 ? [node.feedback_variable] : [];
  });
}

/** How a TURN_COMPLETED's outcome came about, in words. */
function outcomeThought(outcome: TurnOutcome): string {
  switch (outcome.status) {
    case "Complete":
      return "the run reached its end";
    case "PartialSuccess":
      return `the run reached its end with warnings: ${outcome.warnings.map((warning) => `${warning.code}: ${warning.message}`).join("; ")}`;
    case "Failed":
      return `${outcome.error.code}: ${outcome.error.message}`;
    case "Cancelled":
      return `cancelled: ${outcome.reason}`;
  }
}

/**
 * The SimulationTrace of one recipe run, from its stored events in log
 * (seq) order: one step per state transition (NODE_STARTED, NODE_COMPLETED,
 * NODE_FAILED, ROUTE_TAKEN, EVALUATION_SCORED, HUMAN_INPUT_REQUESTED,
 * TURN_SUSPENDED, HUMAN_INPUT_RECEIVED, RECIPE_STARTED, PREFLIGHT_CHECKED,
 * TURN_COMPLETED); stream chunks and warnings are not steps.
 *
 * The snapshots replay the blackboard: the inputs first, then each node's
 * output at its output key and each refining evaluator's critique at its
 * feedback variable; a NODE_STARTED's checkpoint, when it carries one, is
 * the ground truth and replaces the replayed blackboard, and so does the
 * final blackboard a TURN_COMPLETED carries. A person's answer is on the
 * blackboard from its human node's NODE_COMPLETED (which writes it under the
 * node's output key), as in the run itself.
 *
 * @throws ConclaveError `not_found` when the events hold no RECIPE_STARTED
 *   (the turn is not a recipe run).
 */
export function simulationTrace(events: readonly EngineEvent[]): SimulationTrace {
  const started = events.find((event) => event.kind === "RECIPE_STARTED");
  if (started?.kind !== "RECIPE_STARTED") {
    const turn = events[0] ? `turn ${events[0].session_id}/${events[0].turn_id}` : "the turn";
    throw new ConclaveError("not_found", `${turn} is not a recipe run`);
  }
  const nodes = nodesOf(started.payload.document);
  let blackboard: JsonObject = { ...started.payload.inputs };
  let status: SimulationTrace["status"] = "running";
  let outcome: SimulationTrace["outcome"];
  /** The human node a person has just answered: it starts again to take the answer. */
  let answered: { node: string; timed_out: boolean } | null = null;
  const steps: SimulationStep[] = [];
  const add = (event: EngineEvent, node: string | null, thought: string, action: string, observation: unknown) =>
    steps.push({
      step: steps.length + 1,
      node,
      kind: event.kind,
      thought,
      action,
      observation: observation ?? null,
      snapshot: blackboard,
      ts: event.ts_monotonic,
    });
  for (const event of events) {
    switch (event.kind) {
      case "RECIPE_STARTED": {
        const { recipe, version, shape, execution_mode, provenance } = event.payload;
        const intent = provenance.original_user_intent ? `; intent: ${provenance.original_user_intent}` : "";
        add(
          event,
          null,
          `run recipe '${recipe}'${version ? ` ${version}` : ""} (${shape}, ${execution_mode})${intent}`,
          "seed the blackboard with the inputs",
          event.payload.inputs,
        );
        break;
      }
      case "PREFLIGHT_CHECKED": {
        const { passed, failures, warnings } = event.payload;
        const problems = [...failures, ...warnings].map((problem) => problem.message).join("; ");
        add(
          event,
          null,
          problems
            ? `the pre-flight constraints, before any node runs: ${problems}`
            : "the pre-flight constraints hold, before any node runs",
          passed
            ? warnings.length > 0
              ? `go on with ${warnings.length} warning(s)`
              : "go on"
            : "stop: a required constraint failed",
          { failures, warnings },
        );
        break;
      }
      case "NODE_STARTED": {
        const { node, kind, step, attempt, checkpoint } = event.payload;
        // A checkpoint is the blackboard as the node started: the ground truth at this point.
        if (checkpoint) blackboard = checkpoint.blackboard;
        const again = attempt > 1 ? ` (attempt ${attempt})` : "";
        const feedback = kind === "agent" ? feedbackOf(nodes, node, blackboard) : [];
        const carrying =
          feedback.length > 0
            ? `, its prompt carrying the critique in ${feedback.map((v) => `'${v}'`).join(", ")}`
            : "";
        add(
          event,
          node,
          `${kind} node '${node}', step ${step} of the run${carrying}`,
          answered?.node === node
            ? answered.timed_out
              ? "go on without an answer"
              : "take the answer"
            : `${startAction(nodes.get(node), kind)}${again}`,
          null,
        );
        break;
      }
      case "NODE_COMPLETED": {
        const { node, kind, output_key, output, agent, worker, elapsed_ms } = event.payload;
        if (output_key) blackboard = written(blackboard, output_key, output);
        if (answered?.node === node) answered = null;
        const thought = agent
          ? `agent ${agent} answered${worker ? ` on ${worker}` : ""} in ${Math.round(elapsed_ms)} ms`
          : kind === "human"
            ? "the person's answer"
            : `the ${kind} node is done`;
        add(
          event,
          node,
          thought,
          output_key
            ? `write it to '${output_key}'`
            : kind === "evaluator"
              ? "take the verdict"
              : "keep it off the blackboard",
          output,
        );
        break;
      }
      case "NODE_FAILED": {
        const { node, code, message, attempt, retrying } = event.payload;
        add(
          event,
          node,
          `attempt ${attempt} failed: ${code}`,
          retrying ? `try again (attempt ${attempt + 1}, policy.max_retries)` : "fail the run",
          { code, message },
        );
        break;
      }
      case "ROUTE_TAKEN":
        if (answered?.node === event.payload.from) answered = null;
        add(event, event.payload.from, event.payload.reason, `route → ${event.payload.to}`, null);
        break;
      case "EVALUATION_SCORED": {
        const { node, score, passed, refinement, critique } = event.payload;
        const evaluator = nodes.get(node);
        let action: string;
        if (evaluator?.kind === "evaluator") {
          const threshold = evaluator.pass_threshold;
          if (passed) action = `score ${score} ≥ ${threshold}: pass`;
          else if (refinement < evaluator.max_refinements) {
            action = `score ${score} < ${threshold}: refine`;
            // The critique goes where the generator's next prompt reads it.
            blackboard = written(blackboard, evaluator.feedback_variable, critique);
          } else
            action = `score ${score} < ${threshold} after ${refinement} refinement(s): go on with the last attempt`;
        } else action = `score ${score}: ${passed ? "pass" : "below the threshold"}`;
        add(event, node, critique || "the judge gave no critique", action, { score, passed, refinement, critique });
        break;
      }
      case "HUMAN_INPUT_REQUESTED": {
        const { node, prompt, required_role, expires_at } = event.payload;
        add(
          event,
          node,
          prompt,
          `ask a person${required_role ? ` in the role '${required_role}'` : ""}`,
          expires_at !== undefined ? { expires_at } : null,
        );
        break;
      }
      case "TURN_SUSPENDED":
        status = "suspended";
        add(
          event,
          event.payload.node,
          "the run waits for an answer, durably: no process holds it",
          "suspend for a person",
          {
            ...(event.payload.expires_at !== undefined ? { expires_at: event.payload.expires_at } : {}),
            ...(event.payload.remaining_ms !== undefined ? { remaining_ms: event.payload.remaining_ms } : {}),
          },
        );
        break;
      case "HUMAN_INPUT_RECEIVED": {
        const { node, answer, user_id, role, timed_out } = event.payload;
        status = "running";
        answered = { node, timed_out };
        add(
          event,
          node,
          timed_out ? "nobody answered in time" : `${user_id ?? "someone"} answered${role ? ` as ${role}` : ""}`,
          timed_out ? "resume without an answer" : "resume with the answer",
          timed_out ? { timed_out: true } : answer,
        );
        break;
      }
      case "TURN_COMPLETED":
        status = "completed";
        outcome = event.payload.outcome;
        if (event.payload.output) blackboard = event.payload.output;
        add(event, null, outcomeThought(outcome), `end: ${outcome.status}`, outcome);
        break;
      default:
        break;
    }
  }
  return {
    session_id: started.session_id,
    turn_id: started.turn_id,
    recipe: started.payload.recipe,
    ...(started.payload.version ? { version: started.payload.version } : {}),
    provenance: started.payload.provenance,
    status,
    ...(outcome ? { outcome } : {}),
    steps,
  };
}

/**
 * One line of a step, for people (`conclave trace`):
 * `#3 write  call agent content.writer  (agent node 'write', step 1 of the run)`,
 * then ` → ` and the observation, shortened, when there is one.
 */
export function describeStep(step: SimulationStep): string {
  const where = step.node ? ` ${step.node}` : "";
  const seen = step.observation === null || step.observation === undefined ? "" : ` → ${short(step.observation)}`;
  return `#${step.step}${where}  ${step.action}  (${short(step.thought, 160)})${seen}`;
}

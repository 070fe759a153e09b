import type { AskGate } from "../../agents/agentTools.ts";
import type {
  DelegateRequest,
  ModelStepRecord,
  ToolCallReply,
  ToolGateRequest,
  ToolManifest,
} from "../../contracts/tool.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { withDeadline } from "../../deadline.ts";
import { ConclaveError } from "../../errors.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import type { ToolDefinition } from "../../tools/defineTool.ts";
import type { ToolPolicy } from "../../tools/policy.ts";
import { stricterRisk } from "../../tools/risk.ts";
import { runTool } from "../../tools/runTool.ts";
import { Slots } from "../toolCalls/slots.ts";
import { type ToolHost, TurnToolCalls, type TurnTools } from "../toolCalls/turnToolCalls.ts";

/** The worker name tool and agent replies of the in-process engine carry. */
export const IN_PROCESS_WORKER = "in-process";

/** A recipe run's tools, in this process: what each node's agent is offered, and how its calls are made. */
export interface InProcessTools {
  /** The manifests offered to the agent of `node` (empty: none). */
  offered(node: string): ToolManifest[];
  /** The agents the agent of `node` may delegate to (empty: none). */
  delegatesOf(node: string): string[];
  /** Every agent some node may delegate to (what a delegated call may delegate to in turn). */
  readonly delegates: string[];
  /** Where an agent call with tools asks for its tool calls and records its model steps. */
  askGate: AskGate;
}

/**
 * Lets a recipe run's agents call tools in this process, under the same
 * governance as on a runner (TurnToolCalls): the policies (the stricter
 * wins), the arguments screened before the log keeps them, every call
 * recorded (requested, approved or denied, started, finished), the
 * session's parallel slots, and each call made with `runTool` directly.
 * A call the policy sends for approval is refused (`approval_required`):
 * nobody can answer an approval in-process. Delegations (`ctx.delegate`)
 * go through the same TurnToolCalls to `delegateTo`. Null when no agent
 * node of the recipe lists a tool or a delegate.
 */
export function openInProcessTools(
  recipe: Recipe,
  run: {
    tools: readonly ToolDefinition[];
    policies: readonly ToolPolicy[];
    record: (body: TurnRecord) => void;
    screenArgs: (args: unknown) => Promise<unknown>;
    /** Asks a delegated agent (one level deeper). */
    delegateTo: NonNullable<TurnTools["delegateTo"]>;
    /** Fires when the run ends: calls in flight are stopped. */
    signal: AbortSignal;
  },
): InProcessTools | null {
  const byId = new Map(recipe.nodes.map((node) => [node.id, node]));
  const listed = (node: Recipe["nodes"][number] | undefined) => (node?.kind === "agent" ? (node.tools ?? []) : []);
  const delegatesOf = (node: Recipe["nodes"][number] | undefined) =>
    node?.kind === "agent" ? (node.delegates ?? []) : [];
  const allowed = new Set(recipe.nodes.flatMap(listed));
  const delegates = [...new Set(recipe.nodes.flatMap(delegatesOf))];
  if (allowed.size === 0 && delegates.length === 0) return null;
  const byName = new Map(run.tools.map((tool) => [tool.manifest.name, tool]));
  const calls = new TurnToolCalls({
    policies: run.policies,
    allowed,
    ...(recipe.tool_risks ? { risks: recipe.tool_risks } : {}),
    record: run.record,
    screenArgs: run.screenArgs,
    delegates: new Set(delegates),
    delegateTo: run.delegateTo,
    // Nothing is buffered: a record is in the log as soon as it is made.
    flushed: async () => {},
    signal: run.signal,
  });
  let slots: Slots | null = null;
  const host: ToolHost = {
    manifest: (name) => byName.get(name)?.manifest,
    slots: (size) => {
      if (!slots || (slots.size !== size && !slots.busy)) slots = new Slots(size);
      return slots;
    },
    invoke: async (call, signal): Promise<ToolCallReply> => {
      const tool = byName.get(call.tool)!;
      const started = performance.now();
      // Bounded as a NATS request is: `timeout` past its budget, `cancelled` when the run ends first.
      const outcome = await withDeadline(
        call.timeout_ms,
        (bounded) => runTool(tool, call, bounded),
        () => new ConclaveError("timeout", `tool ${call.tool} did not answer within ${call.timeout_ms} ms`),
        { signal, onAbort: () => new ConclaveError("cancelled", `the run ended before tool ${call.tool} answered`) },
      );
      return {
        tool: call.tool,
        call_id: call.call_id,
        result: outcome.result,
        ...(outcome.simulated ? { simulated: true } : {}),
        elapsed_ms: performance.now() - started,
        worker: IN_PROCESS_WORKER,
      };
    },
  };
  return {
    delegates,
    delegatesOf: (nodeId) => delegatesOf(byId.get(nodeId)),
    offered: (nodeId) =>
      listed(byId.get(nodeId)).flatMap((name) => {
        const manifest = byName.get(name)?.manifest;
        return manifest ? [{ ...manifest, risk: stricterRisk(manifest.risk, recipe.tool_risks?.[name]) }] : [];
      }),
    askGate: (request) => {
      const kind = (request as { kind?: unknown }).kind;
      if (kind === "model_step") return calls.step(request as ModelStepRecord);
      if (kind === "delegate") return calls.delegate(request as DelegateRequest);
      // In-process results are never stored by reference: there is nothing to read back.
      if (kind === "read_output")
        return Promise.resolve({
          ok: false as const,
          call_id: "read",
          refusal: "unknown_tool" as const,
          message: "no stored tool outputs in-process",
        });
      return calls.call(request as ToolGateRequest, host);
    },
  };
}

/**
 * Procedural nodes: one per patch label (`procedure.<label>`, kind `procedural`), holding the
 * patch, its instruction as text, and the last few results of its adapters; how a turn's patches
 * are dispatched and recorded; and which instructions a turn's context gets.
 */
import type { MemoryGraphStore } from "../graph/store.ts";
import type { MemoryNode, MemoryNodeInput } from "../graph/types.ts";
import { topicsOf } from "../learn/topics.ts";
import type { PatchContext, ProceduralPatch, RecordedPatchResult } from "./patch.ts";
import type { PatchAdapterRegistry } from "./registry.ts";

/** How many adapter results a procedural node keeps (the most recent). */
export const PROCEDURE_RESULTS_KEPT = 5;
/** Most instructions a turn's context gets ({@link proceduresOf}). */
export const MAX_PROCEDURES_IN_CONTEXT = 5;

/** The id of the procedural node of a label. */
export const procedureId = (label: string): string => `procedure.${label}`;

/** What a procedural node's `data` holds. */
export interface ProcedureData {
  label: string;
  patch: ProceduralPatch;
  /** The last {@link PROCEDURE_RESULTS_KEPT} adapter results, oldest first. */
  results: RecordedPatchResult[];
  /** The turn that first taught the label. */
  created_turn: number;
  /** The turn that last taught it (restated or changed). */
  updated_turn: number;
}

/** The node's procedure, or undefined when it is not a procedural node of this shape. */
export function procedureOf(node: MemoryNode): ProcedureData | undefined {
  if (node.kind !== "procedural") return undefined;
  const data = node.data as Partial<ProcedureData>;
  if (typeof data.label !== "string" || typeof data.patch !== "object" || data.patch === null) return undefined;
  return {
    label: data.label,
    patch: data.patch,
    results: Array.isArray(data.results) ? data.results : [],
    created_turn: Number(data.created_turn ?? 0),
    updated_turn: Number(data.updated_turn ?? 0),
  };
}

/**
 * The node to store for a patch a turn taught, given the node of its label (if any) and its
 * adapter's result: the patch replaces the one stored, the result is appended (the last few kept),
 * recurrence counts the turns that taught the label.
 */
export function procedureNode(
  sessionId: string,
  patch: ProceduralPatch,
  existing: MemoryNode | null | undefined,
  result: RecordedPatchResult,
): MemoryNodeInput {
  const before = existing ? procedureOf(existing) : undefined;
  const data: ProcedureData = {
    label: patch.label,
    patch,
    results: [...(before?.results ?? []), result].slice(-PROCEDURE_RESULTS_KEPT),
    created_turn: before?.created_turn ?? result.turn_id,
    updated_turn: result.turn_id,
  };
  return {
    id: procedureId(patch.label),
    session_id: sessionId,
    kind: "procedural",
    text: patch.instruction,
    topics: topicsOf(`${patch.instruction} ${patch.label.replace(/[._]/g, " ")}`),
    recurrence: (existing?.recurrence ?? 0) + 1,
    data: { ...data },
  };
}

/** What {@link recordPatches} did: each patch's result, in the order given. */
export interface RecordedPatches {
  results: { label: string; result: RecordedPatchResult }[];
}

/**
 * Runs each patch's adapter (all at once) and stores each patch on its node with the result. An
 * adapter's failure is a `failed` result, recorded like any other; a store that fails throws.
 */
export async function recordPatches(
  graph: MemoryGraphStore,
  registry: PatchAdapterRegistry,
  context: PatchContext,
  patches: readonly ProceduralPatch[],
): Promise<RecordedPatches> {
  const results = await Promise.all(
    patches.map(async (patch) => {
      const [existing, result] = await Promise.all([
        graph.node(context.session_id, procedureId(patch.label)),
        registry.dispatch(patch, context),
      ]);
      await graph.upsertNode(procedureNode(context.session_id, patch, existing, result));
      return { label: patch.label, result };
    }),
  );
  return { results };
}

/** A commit summary's part about procedures: `; procedures applied 1 noted 0 failed 0`, or "" without any. */
export function proceduresSummary(recorded: RecordedPatches | undefined): string {
  if (!recorded || recorded.results.length === 0) return "";
  const count = (status: string) => recorded.results.filter(({ result }) => result.status === status).length;
  return `; procedures applied ${count("applied")} noted ${count("noted")} failed ${count("failed")}`;
}

const inContext = new WeakMap<readonly MemoryNode[], readonly MemoryNode[]>();

/**
 * The procedural nodes whose instructions a turn's context gets: those whose last adapter result
 * is `applied`, the most recently taught first, at most {@link MAX_PROCEDURES_IN_CONTEXT}. Worked
 * out once per node array (a store hands back the same array until the session changes).
 */
export function procedureNodesOf(nodes: readonly MemoryNode[]): readonly MemoryNode[] {
  let chosen = inContext.get(nodes);
  if (!chosen) {
    chosen = nodes
      .flatMap((node) => {
        const procedure = procedureOf(node);
        return procedure?.results.at(-1)?.status === "applied" ? [{ node, procedure }] : [];
      })
      .sort((a, b) => b.procedure.updated_turn - a.procedure.updated_turn || b.node.updated_at - a.node.updated_at)
      .slice(0, MAX_PROCEDURES_IN_CONTEXT)
      .map(({ node }) => node);
    inContext.set(nodes, chosen);
  }
  return chosen;
}

/** The instructions a turn's context gets (the text of {@link procedureNodesOf}'s nodes). */
export function proceduresOf(nodes: readonly MemoryNode[]): string[] {
  return procedureNodesOf(nodes).map((node) => node.text);
}

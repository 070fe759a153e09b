/**
 * Procedural memory's vocabulary: a patch (how the user wants to be answered, under a dotted
 * label), the adapters that act on patches, and what an adapter's run leaves on the patch's node.
 */

/** Longest patch label, in characters (a node id is `procedure.<label>`, at most 128). */
export const MAX_PATCH_LABEL = 64;
/** Longest instruction a patch keeps, in characters. */
export const MAX_PATCH_INSTRUCTION = 200;
/** Longest `detail` a recorded adapter result keeps, in characters. */
export const MAX_RESULT_DETAIL = 300;

const LABEL = /^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*$/;

/**
 * A procedural patch: a standing instruction about how to answer, learned from what the user said.
 *
 * @example
 * ```ts
 * const patch: ProceduralPatch = { label: "style.length", instruction: "Keep answers short", data: { value: "short" } };
 * ```
 */
export interface ProceduralPatch {
  /**
   * What it is about, as dotted lowercase words: `style.length`, `style.language`, `style.tone`,
   * `style.avoid.<thing>`. A later patch with the same label replaces this one. Adapters are
   * chosen by it (see {@link PatchAdapter.label}).
   */
  label: string;
  /** The instruction, readable as it is: "Keep answers short", "Answer in Spanish". */
  instruction: string;
  /** Small JSON about it, e.g. `{ value: "short" }`: what an adapter acts on. */
  data: Record<string, unknown>;
}

/** What an adapter did with a patch: `applied` it, only `noted` it, or `failed`. */
export type PatchStatus = "applied" | "noted" | "failed";

/** What {@link PatchAdapter.apply} returns. */
export interface PatchResult {
  status: PatchStatus;
  /** Why, or what was done, in a few words (kept on the node, cut to 300 characters). */
  detail?: string;
}

/** What an adapter is told about the patch it applies: whose memory, which turn learned it. */
export interface PatchContext {
  session_id: string;
  turn_id: number;
}

/**
 * Acts on the procedural patches of one label (and the labels under it): the memory service gives
 * it every patch a turn teaches whose label is `label` or starts with `label.` — the longest
 * registered label wins; a patch no adapter's label covers goes to the fallback adapter.
 *
 * An adapter that throws (or takes longer than the registry's time limit) is recorded as `failed`
 * with its message, and the turn gets a `memory_pattern_persistence` warning: its reply still stands.
 */
export interface PatchAdapter {
  /** The label it handles: `style` handles `style`, `style.length`, `style.avoid.emojis`, … */
  label: string;
  /** Its name in recorded results; its label when absent. */
  name?: string;
  /** Acts on one patch a turn taught; what it returns is recorded on the patch's node. */
  apply(patch: ProceduralPatch, context: PatchContext): PatchResult | Promise<PatchResult>;
}

/** One run of an adapter on a patch, as the patch's node keeps it (the last few runs). */
export interface RecordedPatchResult {
  /** The adapter's name (or label). */
  adapter: string;
  status: PatchStatus;
  detail: string;
  /** The turn whose commit ran it. */
  turn_id: number;
}

/** Whether `label` is a patch label: dotted lowercase words (`a-z 0-9 _`), at most {@link MAX_PATCH_LABEL}. */
export function isPatchLabel(label: string): boolean {
  return label.length <= MAX_PATCH_LABEL && LABEL.test(label);
}

/**
 * A label as said (by a model, say) made a patch label: lowercase, spaces and dashes to `_`,
 * other characters dropped, empty segments removed; undefined when nothing valid is left.
 */
export function cleanPatchLabel(raw: string): string | undefined {
  const label = raw
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, "_")
    .replace(/[^a-z0-9_.]/g, "")
    .split(".")
    .filter((segment) => segment.replace(/_/g, "") !== "")
    .join(".");
  return isPatchLabel(label) ? label : undefined;
}

/**
 * An adapter, checked: its label must be a patch label (`style`, `style.length`), otherwise a
 * TypeError names it. Returns the adapter as given.
 *
 * @example
 * ```ts
 * const language = definePatchAdapter({
 *   label: "style.language",
 *   apply: (patch) => ({ status: "applied", detail: `replies in ${String(patch.data.value)}` }),
 * });
 * ```
 */
export function definePatchAdapter<A extends PatchAdapter>(adapter: A): A {
  if (typeof adapter.label !== "string" || !isPatchLabel(adapter.label)) {
    throw new TypeError(
      `patch adapter label ${JSON.stringify(adapter.label)} must be dotted lowercase words (a-z, 0-9, _), at most ${MAX_PATCH_LABEL} characters`,
    );
  }
  if (typeof adapter.apply !== "function") throw new TypeError(`patch adapter '${adapter.label}' has no apply()`);
  return adapter;
}

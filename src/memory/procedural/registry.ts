/**
 * Patch adapters by label: the registry that picks the adapter of a patch (its exact label, else
 * the longest registered dotted prefix, else the fallback) and runs it, whatever it does, into a
 * result to record; and the built-in adapters.
 */
import { withDeadline } from "../../deadline.ts";
import { messageOf, singleLine } from "../../errors.ts";
import {
  definePatchAdapter,
  MAX_RESULT_DETAIL,
  type PatchAdapter,
  type PatchContext,
  type PatchStatus,
  type ProceduralPatch,
  type RecordedPatchResult,
} from "./patch.ts";

/** How long one adapter may take on one patch before it is recorded as failed, by default. */
export const PATCH_ADAPTER_TIMEOUT_MS = 2_000;

const STATUSES: ReadonlySet<PatchStatus> = new Set(["applied", "noted", "failed"]);

/**
 * The default fallback: keeps the patch as a note (status `noted`), for a label no adapter
 * handles. A noted patch is remembered but not put in a turn's context.
 */
export const notingPatchAdapter: PatchAdapter = definePatchAdapter({
  label: "fallback",
  apply: (patch) => ({ status: "noted", detail: `no adapter handles '${patch.label}': kept as a note` }),
});

/**
 * The built-in `style` adapter: a preference about how to answer (`style.length`,
 * `style.language`, `style.tone`, `style.avoid.*`, …) is applied by putting its instruction in the
 * agents' context from the next turn on (`MemoryRetrieveReply.procedures`).
 */
export const stylePatchAdapter: PatchAdapter = definePatchAdapter({
  label: "style",
  apply: (patch) =>
    patch.instruction.trim()
      ? { status: "applied", detail: `answers follow: ${patch.instruction}` }
      : { status: "failed", detail: "an empty instruction" },
});

/** The adapters a memory service runs by default: {@link stylePatchAdapter}. */
export function defaultPatchAdapters(): PatchAdapter[] {
  return [stylePatchAdapter];
}

/** Options of a {@link PatchAdapterRegistry}. */
export interface PatchRegistryOptions {
  /** Runs patches no adapter's label covers. Default {@link notingPatchAdapter}. */
  fallback?: PatchAdapter | undefined;
  /** How long one adapter may take on one patch. Default {@link PATCH_ADAPTER_TIMEOUT_MS}. */
  timeoutMs?: number | undefined;
}

/** Adapters by label, and the fallback. */
export class PatchAdapterRegistry {
  readonly #byLabel = new Map<string, PatchAdapter>();
  readonly #fallback: PatchAdapter;
  readonly #timeoutMs: number;

  constructor(adapters: readonly PatchAdapter[] = [], options: PatchRegistryOptions = {}) {
    for (const adapter of adapters) this.register(adapter);
    this.#fallback = options.fallback ?? notingPatchAdapter;
    this.#timeoutMs = options.timeoutMs ?? PATCH_ADAPTER_TIMEOUT_MS;
  }

  /** Adds the adapter (checked as {@link definePatchAdapter} does); it replaces one registered with its label. */
  register(adapter: PatchAdapter): this {
    this.#byLabel.set(definePatchAdapter(adapter).label, adapter);
    return this;
  }

  /** The labels adapters are registered for, sorted. */
  get labels(): string[] {
    return [...this.#byLabel.keys()].sort();
  }

  /** The adapter of `label`: registered for it exactly, else for its longest dotted prefix, else the fallback. */
  adapterFor(label: string): PatchAdapter {
    for (let prefix = label; prefix !== ""; prefix = prefix.slice(0, Math.max(0, prefix.lastIndexOf(".")))) {
      const adapter = this.#byLabel.get(prefix);
      if (adapter) return adapter;
    }
    return this.#fallback;
  }

  /**
   * Runs the patch's adapter. Never throws: an adapter that throws, rejects, answers something
   * that is not a result, or takes longer than the time limit is a `failed` result with the reason.
   */
  async dispatch(patch: ProceduralPatch, context: PatchContext): Promise<RecordedPatchResult> {
    const adapter = this.adapterFor(patch.label);
    const recorded = (status: PatchStatus, detail: string): RecordedPatchResult => ({
      adapter: adapter.name ?? adapter.label,
      status,
      detail: singleLine(detail, MAX_RESULT_DETAIL),
      turn_id: context.turn_id,
    });
    try {
      const result = await withDeadline(
        this.#timeoutMs,
        () => adapter.apply(patch, context),
        () => new Error(`no result within ${this.#timeoutMs} ms`),
      );
      if (typeof result !== "object" || result === null || !STATUSES.has(result.status)) {
        return recorded("failed", "answered no result ({ status: applied | noted | failed })");
      }
      return recorded(result.status, typeof result.detail === "string" ? result.detail : "");
    } catch (error) {
      return recorded("failed", messageOf(error) || "failed");
    }
  }
}

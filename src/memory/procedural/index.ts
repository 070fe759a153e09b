/**
 * Procedural memory: standing instructions about how to answer (patches, under dotted labels),
 * learned by the memory commit, acted on by patch adapters chosen by label (with a fallback), kept
 * as `procedural` nodes with their adapters' results, and handed to the next turns' context.
 */

export {
  MAX_PROCEDURES_IN_CONTEXT,
  PROCEDURE_RESULTS_KEPT,
  type ProcedureData,
  procedureId,
  procedureNode,
  procedureNodesOf,
  procedureOf,
  proceduresOf,
  proceduresSummary,
  type RecordedPatches,
  recordPatches,
} from "./nodes.ts";
export {
  cleanPatchLabel,
  definePatchAdapter,
  isPatchLabel,
  MAX_PATCH_INSTRUCTION,
  MAX_PATCH_LABEL,
  MAX_RESULT_DETAIL,
  type PatchAdapter,
  type PatchContext,
  type PatchResult,
  type PatchStatus,
  type ProceduralPatch,
  type RecordedPatchResult,
} from "./patch.ts";
export {
  defaultPatchAdapters,
  notingPatchAdapter,
  PATCH_ADAPTER_TIMEOUT_MS,
  PatchAdapterRegistry,
  type PatchRegistryOptions,
  stylePatchAdapter,
} from "./registry.ts";

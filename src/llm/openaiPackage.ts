/**
 * The official `openai` client, an optional peer dependency: LLM mode and
 * model embeddings need it, the offline model does not. It is imported the
 * first time an OpenAI-compatible model or embedder is used (or when a worker
 * starts in LLM mode, so a missing package is said at once, in one line).
 */
import type { zodResponseFormat } from "openai/helpers/zod";
import { importOptional } from "../optionalPackages.ts";

/** The parts of the `openai` package Conclave uses. */
export interface OpenAIPackage {
  OpenAI: typeof import("openai").default;
  zodResponseFormat: typeof zodResponseFormat;
}

let loaded: OpenAIPackage | undefined;
let loading: Promise<OpenAIPackage> | undefined;

/** The `openai` package, imported once; a MissingDependencyError naming it when it is not installed. */
export function loadOpenAI(): Promise<OpenAIPackage> {
  loading ??= importOptional("LLM mode (an OpenAI-compatible model or embedder)", ["openai"], async () => {
    const [client, helpers] = await Promise.all([import("openai"), import("openai/helpers/zod")]);
    loaded = { OpenAI: client.default, zodResponseFormat: helpers.zodResponseFormat };
    return loaded;
  });
  // A failed import is not cached: installing the package and trying again works.
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/** The package if it has been imported: an error from the client can only exist once it has. */
export function loadedOpenAI(): OpenAIPackage | undefined {
  return loaded;
}

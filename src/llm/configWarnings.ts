/**
 * The half-set LLM and embedding configurations `conclave config` warns about: settings that are
 * read but do nothing, or that make a choice the user may not expect. Each warning is one line.
 * What the processes refuse outright is {@link llmConfigProblem}'s, not a warning.
 */
import { type Env, namesOf, readSetting } from "../config/load.ts";
import { maskUrl } from "../config/mask.ts";
import type { ConfigName } from "../config/schema.ts";
import { DEFAULT_LLM_BASE_URL, DEFAULT_LLM_MODEL, llmConfigFromEnv, OFFLINE_LLM_MODEL } from "./config.ts";
import { embeddingConfigFromEnv, OFFLINE_EMBEDDING_MODEL } from "./embeddings.ts";

/** A variable as set: the name it was read from and its text; undefined when unset (or its value is bad). */
function read(env: Env, name: ConfigName): { variable: string; value: string } | undefined {
  try {
    const reading = readSetting(env, name, {});
    if (reading.origin.kind !== "env" && reading.origin.kind !== "fallback") return undefined;
    return { variable: reading.origin.variable, value: String(reading.value) };
  } catch {
    return undefined;
  }
}

/** Both the CONCLAVE_* name and its standard fallback set, to different values: which one wins. */
function shadowed(env: Env, name: ConfigName): string[] {
  const set = namesOf(name).filter(({ variable }) => (env[variable] ?? "").trim() !== "");
  if (set.length < 2) return [];
  const values = new Set(set.map(({ variable }) => env[variable]!.trim()));
  if (values.size < 2) return [];
  return [`${set[0]!.variable} and ${set[1]!.variable} are both set: ${set[0]!.variable} wins`];
}

/**
 * One line per half-set combination of the LLM and embedding settings in `env` (none when the
 * configuration is whole or empty). Never throws: bad values are `conclave config`'s problems.
 */
export function llmConfigWarnings(env: Env): string[] {
  const warnings = [
    ...shadowed(env, "CONCLAVE_LLM_BASE_URL"),
    ...shadowed(env, "CONCLAVE_LLM_API_KEY"),
    ...shadowed(env, "CONCLAVE_LLM_MODEL"),
  ];
  const base = read(env, "CONCLAVE_LLM_BASE_URL");
  const key = read(env, "CONCLAVE_LLM_API_KEY");
  const model = read(env, "CONCLAVE_LLM_MODEL");
  const offlineForced = model?.value === OFFLINE_LLM_MODEL;
  const llm = !offlineForced && (base !== undefined || key !== undefined);
  if (offlineForced && (base || key))
    warnings.push(
      `${model.variable}=offline keeps the offline model: ${[base?.variable, key?.variable].filter(Boolean).join(" and ")} ${base && key ? "are" : "is"} not used`,
    );
  if (model && !offlineForced && !base && !key)
    warnings.push(
      `${model.variable} is set without an API key or base URL: the offline model runs; set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)`,
    );
  if (base && !key && !offlineForced)
    warnings.push(
      `${base.variable} is set without an API key: a placeholder key is sent, which only a local server takes; set OPENAI_API_KEY if it needs one`,
    );
  if (llm && key && base && !model && new URL(base.value).origin !== new URL(DEFAULT_LLM_BASE_URL).origin)
    warnings.push(
      `no model is set: the default ${DEFAULT_LLM_MODEL} (an OpenAI model) is asked of ${base.variable}=${maskUrl(base.value)}; set OPENAI_MODEL if that server lacks it`,
    );
  if (!llm)
    for (const name of ["CONCLAVE_LLM_TIMEOUT_MS", "CONCLAVE_LLM_MAX_RETRIES"] as const) {
      const extra = read(env, name);
      if (extra)
        warnings.push(`${extra.variable} is set but no LLM is configured (no API key or base URL): it is not used`);
    }
  const embedding = read(env, "CONCLAVE_EMBEDDING_MODEL");
  for (const name of ["CONCLAVE_EMBEDDING_TIMEOUT_MS", "CONCLAVE_EMBEDDING_DIMENSIONS"] as const) {
    const extra = read(env, name);
    if (!extra) continue;
    if (!embedding)
      warnings.push(`${extra.variable} is set without CONCLAVE_EMBEDDING_MODEL: it is not used (no embeddings)`);
    else if (embedding.value === OFFLINE_EMBEDDING_MODEL)
      warnings.push(`${extra.variable} is set with CONCLAVE_EMBEDDING_MODEL=offline: it is not used`);
  }
  return warnings;
}

/**
 * What the processes would refuse in the LLM and embedding settings as a whole (a base URL off
 * this machine without a key, a keyless server without a model, an embedding model without a
 * server), in one line; undefined when they start.
 */
export function llmConfigProblem(env: Env): string | undefined {
  try {
    embeddingConfigFromEnv(env as NodeJS.ProcessEnv, llmConfigFromEnv(env as NodeJS.ProcessEnv));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

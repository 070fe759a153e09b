import { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";

/**
 * The model an agent thinks with, when not the worker's (`defineAgent`'s `model`):
 *
 * - a model name (`"qwen2.5:7b"`): that model on the worker's own LLM server
 *   (`CONCLAVE_LLM_BASE_URL`, or `startWorker`'s `llm`), with its key; on a worker
 *   without an LLM server (the offline mode) the agent stays offline like the others;
 * - `{ name, baseUrl }`: that model on another OpenAI-compatible server, also on an
 *   offline worker. Its key is read from the variable `apiKeyEnv` names, else as the
 *   worker's is (`CONCLAVE_LLM_API_KEY`, else `OPENAI_API_KEY`; a server on loopback
 *   without one gets a placeholder).
 */
export type AgentModelChoice =
  | string
  | {
      /** The model id sent with each request. */
      name: string;
      /** The OpenAI-compatible API, where `/chat/completions` is appended (e.g. `http://127.0.0.1:11434/v1`). */
      baseUrl?: string;
      /** The environment variable holding the key for `baseUrl` (needs `baseUrl`). */
      apiKeyEnv?: string;
    };

/** An agent's model choice, checked and in one shape (`AgentDefinition.model`). */
export interface AgentModelSpec {
  readonly name: string;
  readonly baseUrl?: string;
  readonly apiKeyEnv?: string;
}

/** As CONCLAVE_LLM_MODEL takes it (src/config/schema.ts). */
const ModelName = z
  .string()
  .min(1, "must not be empty")
  .max(256, "must be at most 256 characters")
  .regex(/^[^\s\p{Cc}]+$/u, "must not contain spaces or control characters");

const ModelObject = z
  .strictObject({
    name: ModelName,
    baseUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be an environment variable's name")
      .optional(),
  })
  .refine((spec) => spec.apiKeyEnv === undefined || spec.baseUrl !== undefined, {
    path: ["apiKeyEnv"],
    message: "needs a baseUrl (a model on the worker's server uses the worker's key)",
  });

/** The choice checked: the spec, or a one-line problem naming the field (`model.baseUrl: …`). */
export function parseAgentModel(value: unknown): { spec: AgentModelSpec } | { problem: string } {
  if (typeof value === "string") {
    const name = ModelName.safeParse(value);
    return name.success ? { spec: { name: name.data } } : { problem: problemOf(name.error) };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { problem: "model must be a model name or { name, baseUrl?, apiKeyEnv? }" };
  const parsed = ModelObject.safeParse(value);
  if (!parsed.success) return { problem: problemOf(parsed.error) };
  const { name, baseUrl, apiKeyEnv } = parsed.data;
  return { spec: { name, ...(baseUrl ? { baseUrl } : {}), ...(apiKeyEnv ? { apiKeyEnv } : {}) } };
}

const problemOf = (error: z.ZodError): string => describeIssues(error, { at: "model", join: "; " });

/**
 * vitest's global set-up: the suite runs on the offline model unless a test says otherwise. Since
 * `OPENAI_API_KEY` alone selects LLM mode (docs/agents.md), a developer's key, base URL or model in
 * the shell would turn tests written for the offline model into calls to a paid API. They are
 * removed here, before any test file's process starts (each inherits this environment); tests of
 * the model path set what they need against the suite's own model server.
 */
const MODEL_VARIABLES = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "CONCLAVE_LLM_API_KEY",
  "CONCLAVE_LLM_BASE_URL",
  "CONCLAVE_LLM_MODEL",
  "CONCLAVE_EMBEDDING_MODEL",
];

export default function setup(): void {
  for (const variable of MODEL_VARIABLES) delete process.env[variable];
}

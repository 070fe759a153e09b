/**
 * Every environment variable Conclave reads: its type, default, documentation
 * and masking, in one table. Modules read their variables through load.ts
 * (`setting(env, "CONCLAVE_LLM_TIMEOUT_MS")`), so a bad value is the same
 * one-line "config" error wherever it is read, and `conclave config` prints
 * the whole table with each value's origin.
 *
 * Precedence of one variable: its `CONCLAVE_*` name, then its standard
 * fallbacks in order (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, NATS_URL, NATS_CREDS),
 * then its default. An empty value counts as unset.
 */
import { z } from "zod";
import { parsePipelineName } from "../contracts/pipeline.ts";
import { A2A_VARIABLES } from "./schema/a2a.ts";
import { CLUSTER_VARIABLES } from "./schema/cluster.ts";
import { CONTEXT_VARIABLES } from "./schema/context.ts";
import { COST_VARIABLES } from "./schema/cost.ts";
import { EVENT_LOG_VARIABLES } from "./schema/eventLog.ts";
import { GATEWAY_VARIABLES } from "./schema/gateway.ts";
import { RETENTION_VARIABLES } from "./schema/retention.ts";
import { TRACING_VARIABLES } from "./schema/tracing.ts";
import {
  type ConfigVariable,
  commaList,
  flag,
  httpUrl,
  oneOf,
  text,
  urlOf,
  variable,
  wholeNumber,
} from "./variable.ts";

/** Most dimensions a stored vector may have (memory/graph/types.ts MAX_EMBEDDING_DIMENSIONS; a test keeps them equal). */
const MAX_EMBEDDING_DIMENSIONS = 1_536;
const modelName = z
  .string()
  .max(256, "must be at most 256 characters")
  .regex(/^[^\s\p{Cc}]+$/u, "must not contain spaces or control characters");
const path = text;
/** A turn pipeline's name (`--pipeline`'s syntax), checked; a recipe's file is read by the runner. */
const pipelineName = text.superRefine((value, ctx) => {
  const parsed = parsePipelineName(value);
  if ("error" in parsed) ctx.addIssue({ code: "custom", message: parsed.error });
});

/** The variables, by name, in the order `conclave config` lists them. */
export const CONFIG_SCHEMA = {
  CONCLAVE_ENV: variable({
    group: "environment",
    schema: oneOf(
      ["development", "production"],
      "not a known environment; use one of development, production (any case; unset means development)",
    ),
    default: "development",
    doc: "production refuses the development NATS credentials, clear-text NATS off loopback, and requires credentials (docs/production.md).",
  }),

  CONCLAVE_NATS_URL: variable({
    group: "nats",
    schema: text,
    fallbacks: ["NATS_URL"],
    default: "nats://127.0.0.1:4222",
    mask: "url",
    doc: "NATS server URL(s), comma-separated; tls:// requires TLS.",
  }),
  ...CLUSTER_VARIABLES,
  CONCLAVE_NATS_USER: variable({
    group: "nats",
    schema: text,
    perRole: true,
    defaultText: "the role's development user (not in production)",
    doc: "NATS user of the process's role.",
  }),
  CONCLAVE_NATS_PASSWORD: variable({
    group: "nats",
    schema: z.string(),
    perRole: true,
    keepSpaces: true,
    mask: "secret",
    defaultText: "the role's development password (not in production)",
    doc: "NATS password; prefer CONCLAVE_NATS_PASSWORD_FILE.",
  }),
  CONCLAVE_NATS_PASSWORD_FILE: variable({
    group: "nats",
    schema: path,
    perRole: true,
    doc: "A file holding the NATS password (its trailing newline dropped).",
  }),
  CONCLAVE_NATS_NKEY_SEED_FILE: variable({
    group: "nats",
    schema: path,
    perRole: true,
    doc: "A file holding the role's nkey user seed (SU…), instead of a user and password.",
  }),
  CONCLAVE_NATS_CREDS_FILE: variable({
    group: "nats",
    schema: path,
    perRole: true,
    fallbacks: ["NATS_CREDS"],
    doc: "A .creds file (user JWT and seed) for servers in operator/JWT mode. NATS_CREDS is used only when no CONCLAVE_NATS_* login (user, password, nkey seed, creds) is set for the role.",
  }),
  CONCLAVE_NATS_TLS_CA: variable({
    group: "nats",
    schema: path,
    perRole: true,
    doc: "PEM file of the CA that signed the NATS server's certificate; requires TLS.",
  }),
  CONCLAVE_NATS_TLS_CERT: variable({
    group: "nats",
    schema: path,
    perRole: true,
    doc: "PEM client certificate (with CONCLAVE_NATS_TLS_KEY); requires TLS.",
  }),
  CONCLAVE_NATS_TLS_KEY: variable({
    group: "nats",
    schema: path,
    perRole: true,
    doc: "PEM key of the client certificate.",
  }),

  CONCLAVE_LLM_BASE_URL: variable({
    group: "llm",
    schema: httpUrl,
    fallbacks: ["OPENAI_BASE_URL"],
    mask: "url",
    defaultText: "https://api.openai.com/v1 when an API key is set; else none: the deterministic offline model",
    doc: "OpenAI-compatible API (OpenAI, Ollama, vLLM, llama.cpp), where /chat/completions is appended. Set: LLM mode.",
  }),
  CONCLAVE_LLM_API_KEY: variable({
    group: "llm",
    schema: text,
    fallbacks: ["OPENAI_API_KEY"],
    mask: "secret",
    defaultText: "none; a placeholder for a server on loopback, else required",
    doc: "Bearer token sent to the LLM server (and its /embeddings). Set alone: LLM mode on OpenAI with the default model.",
  }),
  CONCLAVE_LLM_MODEL: variable({
    group: "llm",
    schema: modelName,
    fallbacks: ["OPENAI_MODEL"],
    defaultText: "gpt-4.1-mini when an API key is set; else required with a base URL",
    doc: "Model id sent with every request; `offline` keeps the offline model even with a key set.",
  }),
  CONCLAVE_LLM_TIMEOUT_MS: variable({
    group: "llm",
    schema: wholeNumber(1, Number.MAX_SAFE_INTEGER, " (milliseconds)"),
    default: 30_000,
    doc: "Deadline of one model call, retries and the streamed body included.",
  }),
  CONCLAVE_LLM_MAX_RETRIES: variable({
    group: "llm",
    schema: wholeNumber(0, 10),
    default: 2,
    doc: "Retries of a call failed with 408, 409, 429, 5xx or a connection error.",
  }),

  CONCLAVE_EMBEDDING_MODEL: variable({
    group: "embeddings",
    schema: modelName,
    defaultText: "none: memory ranks without embeddings",
    doc: "Embedding model on the LLM server (/embeddings), or `offline` (hashed topics, not semantic).",
  }),
  CONCLAVE_EMBEDDING_TIMEOUT_MS: variable({
    group: "embeddings",
    schema: wholeNumber(1, Number.MAX_SAFE_INTEGER, " (milliseconds)"),
    default: 2_000,
    doc: "Deadline of one embeddings call, retries included.",
  }),
  CONCLAVE_EMBEDDING_DIMENSIONS: variable({
    group: "embeddings",
    schema: wholeNumber(1, MAX_EMBEDDING_DIMENSIONS, " (the most a memory node keeps)"),
    defaultText: "the model's own size",
    doc: "Vector size to ask for (models that can shorten vectors); vectors of another size are refused.",
  }),

  CONCLAVE_RUNNER_COGNITION: variable({
    group: "runner",
    schema: oneOf(["workers", "runner"]),
    default: "workers",
    doc: "runner: the runner hosts the scheduler, council, critics and memory itself; workers: it asks workers.",
  }),
  CONCLAVE_PIPELINE: variable({
    group: "runner",
    schema: pipelineName,
    default: "cognitive",
    doc: "The turn pipeline of sessions that chose none: cognitive, agents (only your agents), agents+council, or recipe:FILE (docs/agents.md).",
  }),
  CONCLAVE_PARTITIONS: variable({
    group: "runner",
    schema: wholeNumber(1),
    defaultText: "16",
    doc: "Partitions of the turn WAL, fixed when the first runner makes it; runners share them out (docs/operations.md, Scaling out).",
  }),
  CONCLAVE_EVENT_STREAMS: variable({
    group: "runner",
    schema: wholeNumber(1),
    defaultText: "3",
    doc: "Streams of the event log, fixed when the first runner makes it; a session's events are in one (docs/operations.md, Scaling out).",
  }),
  CONCLAVE_MAX_RUNNING_TURNS: variable({
    group: "runner",
    schema: wholeNumber(1),
    defaultText: "32 × the number of cores",
    doc: "Turns a runner runs at once.",
  }),
  CONCLAVE_MAX_QUEUED_TURNS: variable({
    group: "runner",
    schema: wholeNumber(1),
    defaultText: "64 × the running limit",
    doc: "Turns a runner keeps waiting before it answers busy.",
  }),
  CONCLAVE_MAX_QUEUE_WAIT_MS: variable({
    group: "runner",
    schema: wholeNumber(1),
    defaultText: "30000",
    doc: "Longest a turn should wait for a place: beyond what the runner starts within it at its measured rate, submissions get busy.",
  }),
  CONCLAVE_TENANT_QUOTA: variable({
    group: "runner",
    schema: wholeNumber(1),
    defaultText: "no quota",
    doc: "Most turns one tenant may have running or waiting on a runner.",
  }),
  CONCLAVE_WATCH_MAX_PER_TENANT: variable({
    group: "runner",
    schema: wholeNumber(1),
    default: 64,
    doc: "Most follow-watches (conclave.turn.watch) one tenant may hold open on a runner; more get busy.",
  }),
  CONCLAVE_WATCH_MAX_PER_SESSION: variable({
    group: "runner",
    schema: wholeNumber(1),
    default: 8,
    doc: "Most follow-watches one session may have open on a runner; more get busy.",
  }),
  CONCLAVE_WATCH_KEEPALIVE_MS: variable({
    group: "runner",
    schema: wholeNumber(10_000, 300_000, " (milliseconds)"),
    default: 15_000,
    doc: "How long a runner keeps a follow-watch its requester has not renewed (clients renew every 5 s).",
  }),
  CONCLAVE_IDLE_SESSION_TTL_MS: variable({
    group: "runner",
    schema: wholeNumber(1, Number.MAX_SAFE_INTEGER, " (milliseconds)"),
    default: 600_000,
    doc: "How long a session without a turn stays in a runner's memory.",
  }),
  ...EVENT_LOG_VARIABLES,
  CONCLAVE_TOOL_OUTPUT_MAX_BYTES: variable({
    group: "runner",
    schema: wholeNumber(256, 1_048_576),
    default: 16_384,
    doc: "A tool result whose JSON is larger is given to the agent (and kept in the log) as a preview and a handle; the whole result is stored for 24 h (KV conclave_tool_outputs) and read back with ctx.tools.read (docs/context.md).",
  }),
  CONCLAVE_TOOL_POLICY: variable({
    group: "runner",
    schema: path,
    doc: "A JSON or YAML file holding the runner's tool policy.",
  }),
  CONCLAVE_WORKING_MEMORY_SCHEMA: variable({
    group: "runner",
    schema: path,
    doc: "A JSON or YAML file holding the JSON Schema (an object's) of each session's working memory: pipeline agents read it, and change it with the update_working_memory tool (docs/knowledge.md). Unset: no working memory.",
  }),
  CONCLAVE_DLQ_PAYLOADS: variable({
    group: "runner",
    schema: oneOf(["redacted", "excerpt"]),
    default: "redacted",
    doc: "excerpt: dead letters keep a bounded excerpt of a peer's payload; redacted: only its hash and length.",
  }),
  CONCLAVE_PERSONA_EVERY: variable({
    group: "runner",
    schema: wholeNumber(1),
    default: 5,
    readElsewhere: "src/workers/startWorker.ts",
    doc: "The persona evolves every this many turns.",
  }),
  CONCLAVE_SANDBOX_DIR: variable({
    group: "runner",
    schema: path,
    defaultText: "<tmpdir>/conclave-sandbox",
    readElsewhere: "src/tools/builtins/sandbox_write.ts",
    doc: "Directory the built-in sandbox_write tool writes in.",
  }),

  CONCLAVE_IDENTITY_DIR: variable({
    group: "runner",
    schema: path,
    default: ".conclave/agents",
    doc: "Where workers read each agent's identity file, <dir>/<agent-id>/identity.md (never written by Conclave; missing or empty: none). It goes first into the agent's identity_persona zone (docs/context.md).",
  }),
  CONCLAVE_SKILLS_DIR: variable({
    group: "runner",
    schema: path,
    defaultText: "./skills for `conclave skills`; none for `conclave worker`",
    doc: "The skills directory `conclave skills` reads and `conclave worker` loads into its agents' context (as --skills gives it).",
  }),

  ...CONTEXT_VARIABLES,
  ...COST_VARIABLES,
  ...A2A_VARIABLES,

  ...RETENTION_VARIABLES,
  CONCLAVE_MEMORY_BACKEND: variable({
    group: "storage",
    // Exact (not any case): runtime/intake/eraseStores.ts compares it as written, to erase a session's graph.
    schema: z.enum(["nats", "postgres"], { error: "must be one of nats, postgres" }),
    default: "nats",
    doc: "Where the memory graph is kept.",
  }),
  CONCLAVE_MEMORY_GRAPH_SESSIONS: variable({
    group: "storage",
    schema: wholeNumber(1),
    default: 4_096,
    doc: "Most sessions' memory graphs a process keeps in memory (for NATS, each followed by one consumer); a session unused for 10 minutes is dropped, so it holds the sessions in use up to this bound (docs/operations.md).",
  }),
  CONCLAVE_POSTGRES_URL: variable({
    group: "storage",
    schema: urlOf("postgres", "postgresql"),
    mask: "url",
    doc: "PostgreSQL for the postgres memory backend and postgres blackboards.",
  }),
  CONCLAVE_REDIS_URL: variable({
    group: "storage",
    schema: urlOf("redis", "rediss"),
    mask: "url",
    doc: "Redis for redis blackboards.",
  }),
  CONCLAVE_DATA_DIR: variable({
    group: "storage",
    schema: path,
    default: ".conclave",
    doc: "JetStream data of the nats-server `conclave up` and `conclave demo` start.",
  }),

  ...TRACING_VARIABLES,

  CONCLAVE_LOG: variable({
    group: "process",
    schema: oneOf(["debug", "info", "warn", "error", "quiet"]),
    default: "info",
    doc: "Log level of the runner, workers and CLI (quiet: warnings and errors).",
  }),
  CONCLAVE_DEBUG: variable({
    group: "process",
    schema: z.string().transform((value) => ["1", "true"].includes(value.toLowerCase())),
    default: false,
    readElsewhere: "src/cli/main.ts",
    doc: "1: a failing command prints its stack (as --debug).",
  }),
  CONCLAVE_INSPECT: variable({
    group: "process",
    schema: flag,
    default: false,
    doc: "1: processes publish their actors' inspection events (as --inspect), for conclave viewer.",
  }),
  CONCLAVE_FAILPOINTS: variable({
    group: "process",
    schema: commaList,
    defaultText: "none armed",
    doc: "Tests only: named places where the process kills itself (src/runtime/failpoints.ts).",
  }),
  CONCLAVE_GATEWAY_TOKEN: variable({
    group: "process",
    schema: text,
    mask: "secret",
    doc: "The bearer token `conclave serve` requires of every request (as --token-file gives it); required when it listens beyond loopback (docs/gateway.md).",
  }),
  ...GATEWAY_VARIABLES,
} as const satisfies Record<string, ConfigVariable>;

/** The name of a variable in the table. */
export type ConfigName = keyof typeof CONFIG_SCHEMA;

/** The value a variable's text parses to. */
export type ConfigValue<N extends ConfigName> = z.output<(typeof CONFIG_SCHEMA)[N]["schema"]>;

/** The roles a per-role NATS variable may name (bus/connection.ts Role). */
export const CONFIG_ROLES = ["client", "runner", "worker", "observer"] as const;

/**
 * The gateway's bounds (`conclave serve`, docs/gateway.md#limits): what one
 * caller can make it hold, so a flood of tasks, sessions or connections costs
 * a bounded amount of memory and never ends the process. Spread into
 * CONFIG_SCHEMA by schema.ts.
 */
import { type ConfigVariable, text, variable, wholeNumber } from "../variable.ts";

const ms = (min: number) => wholeNumber(min, Number.MAX_SAFE_INTEGER, " (milliseconds)");

/** The gateway's variables, in the order `conclave config` lists them. */
export const GATEWAY_VARIABLES = {
  CONCLAVE_GATEWAY_PRINCIPALS: variable({
    group: "process",
    schema: text,
    doc: "A JSON or YAML file mapping each bearer token of `conclave serve` to a principal (a tenant, or a named client with its namespace), as --principals gives it (docs/gateway.md#principals).",
  }),
  CONCLAVE_GATEWAY_MAX_TASKS: variable({
    group: "process",
    schema: wholeNumber(1, 1_000_000),
    default: 1_000,
    doc: "Most A2A tasks `conclave serve` keeps; past it the least recently updated is forgotten (a finished task keeps its result, not its history).",
  }),
  CONCLAVE_GATEWAY_TASK_TTL_MS: variable({
    group: "process",
    schema: ms(1_000),
    default: 3_600_000,
    doc: "How long an A2A task not updated since is kept, in ms.",
  }),
  CONCLAVE_GATEWAY_TASK_BYTES: variable({
    group: "process",
    schema: wholeNumber(65_536),
    default: 64 * 1024 * 1024,
    doc: "Most bytes (as JSON) of all the A2A tasks kept together; past it the least recently updated are forgotten.",
  }),
  CONCLAVE_GATEWAY_MAX_SESSIONS: variable({
    group: "process",
    schema: wholeNumber(1, 1_000_000),
    default: 1_000,
    doc: "Most MCP sessions open at once; a new one past it closes the least recently used idle session.",
  }),
  CONCLAVE_GATEWAY_SESSIONS_PER_CALLER: variable({
    group: "process",
    schema: wholeNumber(1, 1_000_000),
    default: 1_000,
    doc: "Most MCP sessions one caller (one bearer token; without a token, everyone) holds; past it its least recently used goes.",
  }),
  CONCLAVE_GATEWAY_SESSION_IDLE_MS: variable({
    group: "process",
    schema: ms(1_000),
    default: 1_800_000,
    doc: "An MCP session without a request for this long is closed, in ms.",
  }),
  CONCLAVE_GATEWAY_UNUSED_SESSION_IDLE_MS: variable({
    group: "process",
    schema: ms(1_000),
    default: 60_000,
    doc: "An MCP session that never made a call (only its initialize) is closed after this long, in ms.",
  }),
  CONCLAVE_GATEWAY_BODY_TIMEOUT_MS: variable({
    group: "process",
    schema: ms(100),
    default: 30_000,
    doc: "Longest a request's headers and body may take to arrive, in ms: a slower one gets 408 and its connection is closed.",
  }),
  CONCLAVE_GATEWAY_MAX_CONNECTIONS: variable({
    group: "process",
    schema: wholeNumber(1, 1_000_000),
    default: 512,
    doc: "Most HTTP connections open at once; one more is answered 503 and closed.",
  }),
} as const satisfies Record<string, ConfigVariable>;

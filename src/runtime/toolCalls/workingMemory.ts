/**
 * A runner's working memory (docs/knowledge.md, "Working memory"): each
 * session's structured summary, of the shape the runner declares. Pipeline
 * agents read it in their context (`working_memory`); an agent that lists
 * the `update_working_memory` tool changes it through the runner's tool
 * gate. The runner checks every update against the schema (a bad one is
 * refused, with why, and changes nothing) and records it on the turn's log
 * as WORKING_MEMORY_UPDATED, holding the whole memory after it: the log is
 * where the memory lives, so a restart reads it back from there and an
 * erase of the session removes it. This runner keeps a copy per session it
 * serves (no store of its own), read on from where it last read the log.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { readDataFile } from "../../config/dataFile.ts";
import { setting } from "../../config/load.ts";
import { ConfigError } from "../../config/variable.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { describeIssues } from "../../contracts/issues.ts";
import type { ToolGateReply, ToolGateRequest, ToolManifest } from "../../contracts/tool.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { fromWireJsonSchema, WireJsonSchema } from "../../contracts/wireJsonSchema.ts";
import {
  WORKING_MEMORY_MAX_BYTES,
  WORKING_MEMORY_TOOL,
  type WorkingMemoryContent,
  type WorkingMemoryView,
} from "../../contracts/workingMemory.ts";
import { messageOf } from "../../errors.ts";
import { readWorkingMemory } from "../../eventlog/workingMemoryLog.ts";

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** How a runner declares its sessions' working memory (`RunnerOptions.workingMemory`). */
export interface WorkingMemoryOptions {
  /**
   * The memory's shape: a zod object schema, or the JSON Schema of an object
   * (`CONCLAVE_WORKING_MEMORY_SCHEMA` names a file holding one). Every update
   * must leave the memory valid against it.
   */
  schema: z.ZodType | Record<string, unknown>;
  /** What the memory is for, told to the agents' models in the tool's description. */
  description?: string;
}

/**
 * The working memory the environment declares: `CONCLAVE_WORKING_MEMORY_SCHEMA` names a JSON or
 * YAML file holding its JSON Schema. Unset: none. A file that cannot be read is a one-line `config` error.
 */
export function workingMemoryFromEnv(env: NodeJS.ProcessEnv = process.env): WorkingMemoryOptions | undefined {
  const file = setting(env, "CONCLAVE_WORKING_MEMORY_SCHEMA");
  if (!file) return undefined;
  const raw = readDataFile(
    file,
    (reason) => new ConfigError(`CONCLAVE_WORKING_MEMORY_SCHEMA: cannot read ${file}: ${reason}`),
  );
  if (!isObject(raw)) throw new ConfigError(`CONCLAVE_WORKING_MEMORY_SCHEMA ${file}: not a JSON Schema (an object)`);
  return { schema: raw };
}

/** Sessions whose working memory a runner keeps a copy of (the least recently used go first). */
const SESSIONS_KEPT = 10_000;

/** One session's copy: the memory as the log held it through `through`, and as this runner's turns changed it since. */
interface SessionCopy {
  /** The memory as stored through position `through` of the log. */
  stored: WorkingMemoryView;
  through: number;
  /** The memory now (the stored one, with this turn's updates). */
  current: WorkingMemoryView;
  /** The turn the copy was read for: each turn reads the log on once, at its first agent call. */
  turnId: number;
}

/** Where a turn's update is recorded: the turn's log, as the runner writes it. */
export interface WorkingMemoryLog {
  record(body: TurnRecord): void;
  flushed(): Promise<void>;
  /** What earlier attempts of the turn stored (an update they made is answered from there). */
  stored(): readonly EngineEvent[];
}

/** The declared schema as JSON Schema (what agents and their models are shown) and as a check. */
function declared(schema: WorkingMemoryOptions["schema"]): { json: Record<string, unknown>; check: z.ZodType } {
  if (schema instanceof z.ZodType) {
    let json: Record<string, unknown>;
    try {
      json = z.toJSONSchema(schema) as Record<string, unknown>;
    } catch (error) {
      throw new ConfigError(`working memory schema: zod cannot write it as JSON Schema: ${messageOf(error)}`);
    }
    if (json.type !== "object") throw new ConfigError("working memory schema: it must be an object schema (z.object)");
    return { json, check: schema };
  }
  const parsed = WireJsonSchema.safeParse(schema);
  if (!parsed.success)
    throw new ConfigError(`working memory schema: ${describeIssues(parsed.error, { join: "; ", limit: 3 })}`);
  if (parsed.data.type !== "object")
    throw new ConfigError('working memory schema: it must be the JSON Schema of an object ("type": "object")');
  try {
    return { json: parsed.data, check: fromWireJsonSchema(parsed.data) };
  } catch (error) {
    throw new ConfigError(`working memory schema: ${messageOf(error)}`);
  }
}

/** The update tool's arguments: the declared object's fields, none of them required (an update names what it changes). */
function patchSchema(json: Record<string, unknown>): Record<string, unknown> {
  const { required: _required, $schema: _schema, ...rest } = json;
  return rest;
}

const refuse = (callId: string, message: string): ToolGateReply => ({
  ok: false,
  call_id: callId,
  refusal: "invalid_args",
  message,
});

/** A runner's sessions' working memory: see the file's comment. */
export class WorkingMemory {
  /** The tool an agent lists (`defineAgent({ tools: ["update_working_memory"] })`) to change the memory. */
  readonly manifest: ToolManifest;
  /** The declared schema, as JSON Schema. */
  readonly schema: Record<string, unknown>;
  readonly #check: z.ZodType;
  readonly #sessions = new Map<string, SessionCopy>();
  readonly #reads = new Map<string, Promise<SessionCopy>>();

  /** Throws ConfigError (one line) for a schema that is not an object's, or that cannot be checked. */
  constructor(
    private readonly nc: NatsConnection,
    options: WorkingMemoryOptions,
  ) {
    const { json, check } = declared(options.schema);
    this.schema = json;
    this.#check = check;
    this.manifest = {
      name: WORKING_MEMORY_TOOL,
      description: [
        "Changes the session's working memory (a structured summary every agent of the session reads in later turns).",
        "Give only the fields to change: each replaces that field; null removes it.",
        options.description ?? "",
      ]
        .join(" ")
        .trim()
        .slice(0, 1_000),
      risk: "safe",
      effect: "write",
      input_schema: patchSchema(json),
      dry_run: false,
      rollback: false,
    };
  }

  /** The session's working memory for this turn (read on from the log at the turn's first call). */
  async view(sessionId: string, turnId: number): Promise<WorkingMemoryView> {
    return (await this.#copy(sessionId, turnId)).current;
  }

  /**
   * An agent's `update_working_memory` call: the fields it names merged over
   * the memory, the result checked against the schema, recorded and answered
   * with the memory's new version. A call an earlier attempt of the turn made
   * is answered from its log; a refused one is recorded TOOL_CALL_DENIED.
   */
  async update(
    turn: { session_id: string; turn_id: number },
    request: ToolGateRequest,
    callId: string,
    log: WorkingMemoryLog,
  ): Promise<ToolGateReply> {
    const done = log
      .stored()
      .find((event) => event.kind === "WORKING_MEMORY_UPDATED" && event.payload.call_id === callId);
    if (done?.kind === "WORKING_MEMORY_UPDATED") {
      const { version, memory } = done.payload;
      return { ok: true, call_id: callId, result: { version, memory }, replayed: true };
    }
    const ref = {
      call_id: callId,
      tool: WORKING_MEMORY_TOOL,
      agent_id: request.agent_id,
      ...(request.node ? { node: request.node } : {}),
    };
    const denied = (message: string): ToolGateReply => {
      log.record({
        kind: "TOOL_CALL_DENIED",
        payload: { ...ref, refusal: "invalid_args", rule: "working_memory_schema", message },
      });
      return refuse(callId, message);
    };
    if (!isObject(request.args))
      return denied(`${WORKING_MEMORY_TOOL} takes an object of the fields to change; the working memory is unchanged`);
    const copy = await this.#copy(turn.session_id, turn.turn_id);
    const next: Record<string, unknown> = { ...copy.current.memory };
    for (const [field, value] of Object.entries(request.args)) {
      if (value === null) delete next[field];
      else next[field] = value;
    }
    const checked = this.#check.safeParse(next);
    if (!checked.success)
      return denied(
        `${WORKING_MEMORY_TOOL}: the memory would not match its schema (${describeIssues(checked.error, { join: "; ", limit: 3 })}); the working memory is unchanged`,
      );
    if (!isObject(checked.data))
      return denied(`${WORKING_MEMORY_TOOL}: the memory must stay an object; the working memory is unchanged`);
    const memory = checked.data as WorkingMemoryContent;
    const bytes = Buffer.byteLength(JSON.stringify(memory));
    if (bytes > WORKING_MEMORY_MAX_BYTES)
      return denied(
        `${WORKING_MEMORY_TOOL}: the memory would take ${bytes} bytes, over the ${WORKING_MEMORY_MAX_BYTES} a working memory may; the working memory is unchanged`,
      );
    const version = copy.current.version + 1;
    copy.current = { version, memory };
    log.record({
      kind: "WORKING_MEMORY_UPDATED",
      payload: { call_id: callId, agent_id: request.agent_id, version, changed: Object.keys(request.args), memory },
    });
    await log.flushed();
    return { ok: true, call_id: callId, result: { version, memory } };
  }

  /** The session was erased (or let go): its copy is dropped, and the next turn reads the log from its start. */
  forget(sessionId: string): void {
    this.#sessions.delete(sessionId);
    this.#reads.delete(sessionId);
  }

  /** The session's copy, read on from the log once per turn (concurrent calls of a turn share the read). */
  #copy(sessionId: string, turnId: number): Promise<SessionCopy> {
    const known = this.#sessions.get(sessionId);
    if (known && known.turnId === turnId) return Promise.resolve(known);
    const reading = this.#reads.get(sessionId);
    if (reading) return reading;
    const read = (async () => {
      const from = known ?? { stored: { version: 0, memory: {} }, through: 0 };
      const { last, through } = await readWorkingMemory(this.nc, sessionId, from.through);
      const stored = last ? { version: last.event.payload.version, memory: last.event.payload.memory } : from.stored;
      const copy: SessionCopy = { stored, through, current: stored, turnId };
      // Re-inserted: the map's order is the sessions' last use, oldest first.
      this.#sessions.delete(sessionId);
      this.#sessions.set(sessionId, copy);
      if (this.#sessions.size > SESSIONS_KEPT) this.#sessions.delete(this.#sessions.keys().next().value!);
      return copy;
    })();
    this.#reads.set(sessionId, read);
    const done = () => {
      if (this.#reads.get(sessionId) === read) this.#reads.delete(sessionId);
    };
    read.then(done, done);
    return read;
  }
}

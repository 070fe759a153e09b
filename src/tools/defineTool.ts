import { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";
import { ToolEffect, ToolManifest, ToolRisk } from "../contracts/tool.ts";
import { ConclaveError, messageOf } from "../errors.ts";

/** Marks a value as a tool definition, across copies of the package. */
const TOOL_BRAND = Symbol.for("conclave.tool");

/** Raised by `defineTool` for a definition that cannot run: the message names the field. */
export class ToolDefinitionError extends ConclaveError<"invalid_tool"> {
  constructor(message: string) {
    super("invalid_tool", message);
  }
}

/** What a tool's `run`, `dryRun` and `rollback` are given besides their input. */
export interface ToolRunContext {
  readonly sessionId: string;
  readonly turnId: number;
  /** The call's id on the turn's log. */
  readonly callId: string;
  /**
   * The same for every attempt of this call (a takeover may make the call in
   * flight again): a tool with outside effects deduplicates on it.
   */
  readonly idempotencyKey: string;
  /** Fires when the turn no longer wants the result: deadline, cancellation. */
  readonly signal: AbortSignal;
}

/** What `defineTool` takes. */
export interface ToolSpec<I extends z.ZodType, O extends z.ZodType> {
  /** The tool's name: a lowercase word (`disk_usage`). Served on `conclave.tool.<name>`; the model calls it by this name. */
  name: string;
  /** What it does, for the model and for people approving a call. */
  description: string;
  /** The zod schema of its arguments: checked before `run`; its JSON Schema is what the model is shown. */
  input: I;
  /** The zod schema of its result, checked after `run`. Default: any JSON value. */
  output?: O;
  /** `safe`, `standard` or `critical` (needs approval by default). Default `standard`. */
  risk?: "safe" | "standard" | "critical";
  /** `read` (default) or `write`: a write is dry-run when asked, and can be rolled back. */
  effect?: "read" | "write";
  /** Does the call. */
  run(input: z.infer<I>, ctx: ToolRunContext): Promise<z.input<O>> | z.input<O>;
  /** What the call would do, without doing it (asked for `write` tools in a dry run). */
  dryRun?(input: z.infer<I>, ctx: ToolRunContext): Promise<unknown> | unknown;
  /** Undoes a call made earlier, given its input and result (`conclave rollback`). */
  rollback?(call: { input: z.infer<I>; result: z.infer<O> }, ctx: ToolRunContext): Promise<unknown> | unknown;
}

/** A tool, ready for `startWorker({ tools })`. Create it with `defineTool`. */
export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** What workers announce about it. */
  readonly manifest: ToolManifest;
  readonly input: I;
  readonly output: O;
  /** Does the call (see ToolSpec.run). */
  run(input: z.infer<I>, ctx: ToolRunContext): Promise<z.input<O>> | z.input<O>;
  /** What the call would do, without doing it (see ToolSpec.dryRun). */
  dryRun?(input: z.infer<I>, ctx: ToolRunContext): Promise<unknown> | unknown;
  /** Undoes a call made earlier (see ToolSpec.rollback). */
  rollback?(call: { input: z.infer<I>; result: z.infer<O> }, ctx: ToolRunContext): Promise<unknown> | unknown;
}

/**
 * Defines a tool agents may call (`ctx.tools`), under the runner's policy.
 * The definition is checked at once, so a bad tool fails when its file is
 * loaded, naming the field.
 *
 * @example
 * ```ts
 * export const diskUsage = defineTool({
 *   name: "disk_usage",
 *   description: "Free and total bytes of the file system holding a path.",
 *   input: z.object({ path: z.string().default("/") }),
 *   risk: "safe",
 *   run: async ({ path }) => statfs(path).then((s) => ({ free: s.bavail * s.bsize, total: s.blocks * s.bsize })),
 * });
 * ```
 */
export function defineTool<I extends z.ZodType, O extends z.ZodType = z.ZodUnknown>(
  spec: ToolSpec<I, O>,
): ToolDefinition<I, O> {
  if (typeof spec !== "object" || spec === null) throw new ToolDefinitionError("defineTool takes an object");
  const name = String(spec.name);
  if (typeof spec.run !== "function") throw new ToolDefinitionError(`tool '${name}': run must be a function`);
  if (!(spec.input instanceof z.ZodType)) throw new ToolDefinitionError(`tool '${name}': input must be a zod schema`);
  if (spec.output !== undefined && !(spec.output instanceof z.ZodType))
    throw new ToolDefinitionError(`tool '${name}': output must be a zod schema`);
  for (const hook of ["dryRun", "rollback"] as const) {
    if (spec[hook] !== undefined && typeof spec[hook] !== "function")
      throw new ToolDefinitionError(`tool '${name}': ${hook} must be a function`);
  }
  let inputSchema: Record<string, unknown>;
  try {
    inputSchema = z.toJSONSchema(spec.input, { io: "input" }) as Record<string, unknown>;
  } catch (error) {
    throw new ToolDefinitionError(
      `tool '${name}': its input schema has no JSON Schema (${messageOf(error)}); use plain data types`,
    );
  }
  const manifest = ToolManifest.safeParse({
    name: spec.name,
    description: spec.description,
    risk: ToolRisk.parse(spec.risk ?? "standard"),
    effect: ToolEffect.parse(spec.effect ?? "read"),
    input_schema: inputSchema,
    dry_run: typeof spec.dryRun === "function",
    rollback: typeof spec.rollback === "function",
  });
  if (!manifest.success)
    throw new ToolDefinitionError(`tool '${name}' is invalid: ${describeIssues(manifest.error, { join: "; " })}`);
  const definition: ToolDefinition<I, O> = {
    manifest: manifest.data,
    input: spec.input,
    output: (spec.output ?? z.unknown()) as O,
    run: (input, ctx) => spec.run(input, ctx),
    ...(spec.dryRun ? { dryRun: spec.dryRun.bind(spec) } : {}),
    ...(spec.rollback ? { rollback: spec.rollback.bind(spec) } : {}),
  };
  Object.defineProperty(definition, TOOL_BRAND, { value: true });
  return Object.freeze(definition);
}

/** True for a value made by `defineTool` (of any copy of the package). */
export function isToolDefinition(value: unknown): value is ToolDefinition {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[TOOL_BRAND] === true;
}

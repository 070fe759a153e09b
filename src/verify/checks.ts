/**
 * The checks `verify` runs over a session's stored events: each says what it
 * checked, whether it holds, and the evidence (one line per finding, or what
 * was seen when it holds).
 */
import type { EngineEvent } from "../contracts/events.ts";
import { fromRecipeJsonSchema } from "../recipes/jsonSchema.ts";
import type { LoggedMessage } from "./logReader.ts";

/** One check's verdict. */
export interface VerifyCheck {
  /** `log_contiguity`, `recipe_outputs`, `replay_state`, `ledgers`. */
  name: string;
  ok: boolean;
  /** Not run (what it needs is not available to the caller); `ok` is true and `evidence` says why. */
  skipped?: boolean;
  evidence: string[];
}

/** Events after which nothing belongs to the turn's run; later events of these kinds are allowed (a rollback). */
const TERMINAL = "TURN_COMPLETED";
const AFTER_TERMINAL = new Set<string>(["TOOL_CALL_ROLLED_BACK"]);

/** The most findings listed per check (the count of the rest follows). */
const MAX_FINDINGS = 20;

function capped(findings: string[]): string[] {
  if (findings.length <= MAX_FINDINGS) return findings;
  return [...findings.slice(0, MAX_FINDINGS), `… and ${findings.length - MAX_FINDINGS} more`];
}

/**
 * The log's contiguity: every stored message is a valid event of the turn its
 * subject names; each turn's `seq`s are 0..n without gap or repeat; a turn has
 * at most one terminal event (TURN_COMPLETED), with nothing after it but rollbacks.
 */
export function checkContiguity(messages: readonly LoggedMessage[]): VerifyCheck {
  const findings: string[] = [];
  const turns = new Map<number, EngineEvent[]>();
  for (const message of messages) {
    if ("invalid" in message) {
      findings.push(`position ${message.position} (${message.subject}): not a valid event: ${message.invalid}`);
      continue;
    }
    const { event } = message;
    const subjectTurn = Number(message.subject.split(".").at(-1));
    if (subjectTurn !== event.turn_id)
      findings.push(`position ${message.position}: event of turn ${event.turn_id} stored under ${message.subject}`);
    const list = turns.get(event.turn_id) ?? [];
    list.push(event);
    turns.set(event.turn_id, list);
  }
  let open = 0;
  for (const [turnId, events] of [...turns].sort(([a], [b]) => a - b)) {
    const bySeq = [...events].sort((a, b) => a.seq - b.seq);
    const max = bySeq.at(-1)?.seq ?? -1;
    const seen = new Set<number>();
    for (const event of bySeq) {
      if (seen.has(event.seq)) findings.push(`turn ${turnId}: seq ${event.seq} stored twice`);
      seen.add(event.seq);
    }
    const missing: number[] = [];
    for (let seq = 0; seq <= max; seq++) if (!seen.has(seq)) missing.push(seq);
    if (missing.length > 0)
      findings.push(
        `turn ${turnId}: seq gap, ${missing.length} missing (${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ", …" : ""}) of 0..${max}`,
      );
    const terminals = bySeq.filter((event) => event.kind === TERMINAL);
    if (terminals.length > 1)
      findings.push(
        `turn ${turnId}: ${terminals.length} terminal events (seq ${terminals.map((e) => e.seq).join(", ")})`,
      );
    const terminal = terminals[0];
    if (!terminal) open++;
    else {
      const after = bySeq.filter((event) => event.seq > terminal.seq && !AFTER_TERMINAL.has(event.kind));
      if (after.length > 0)
        findings.push(
          `turn ${turnId}: ${after.length} event(s) after its TURN_COMPLETED (seq ${terminal.seq}): ${after
            .slice(0, 3)
            .map((e) => `${e.kind}@${e.seq}`)
            .join(", ")}`,
        );
    }
  }
  const events = messages.length;
  const summary = `${events} stored messages, ${turns.size} turns, ${turns.size - open} with their terminal event${open > 0 ? `, ${open} without (running, suspended or abandoned)` : ""}`;
  return { name: "log_contiguity", ok: findings.length === 0, evidence: [summary, ...capped(findings)] };
}

/** A recipe run's declared outputs schema: `interface.outputs` of the document RECIPE_STARTED recorded. */
function outputsSchemaOf(document: unknown): Record<string, unknown> | null {
  if (typeof document !== "object" || document === null) return null;
  const contract = (document as { interface?: unknown }).interface;
  if (typeof contract !== "object" || contract === null) return null;
  const outputs = (contract as { outputs?: unknown }).outputs;
  return typeof outputs === "object" && outputs !== null && !Array.isArray(outputs)
    ? (outputs as Record<string, unknown>)
    : null;
}

/**
 * Recipe output schemas: each completed recipe run's output (its final
 * blackboard, on TURN_COMPLETED) against the `interface.outputs` its document
 * declares (recorded on RECIPE_STARTED). Runs without a declared schema are counted, not checked.
 */
export function checkRecipeOutputs(messages: readonly LoggedMessage[]): VerifyCheck {
  const schemas = new Map<number, Record<string, unknown> | null>();
  const findings: string[] = [];
  let checked = 0;
  let undeclared = 0;
  for (const message of messages) {
    if (!("event" in message)) continue;
    const { event } = message;
    if (event.kind === "RECIPE_STARTED") schemas.set(event.turn_id, outputsSchemaOf(event.payload.document));
    if (event.kind !== "TURN_COMPLETED" || !schemas.has(event.turn_id)) continue;
    const schema = schemas.get(event.turn_id);
    if (!schema) {
      undeclared++;
      continue;
    }
    if (event.payload.outcome.status === "Failed") continue; // a failed run has no output to check
    checked++;
    let verdict: string | null;
    try {
      const result = fromRecipeJsonSchema(schema).safeParse(event.payload.output ?? {});
      verdict = result.success
        ? null
        : result.error.issues
            .slice(0, 3)
            .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
            .join("; ");
    } catch (error) {
      verdict = `its interface.outputs cannot be used: ${(error as Error).message}`;
    }
    if (verdict) findings.push(`turn ${event.turn_id}: output does not match interface.outputs: ${verdict}`);
  }
  const runs = checked + undeclared;
  const summary =
    runs === 0
      ? "no completed recipe run"
      : `${checked} recipe run output(s) checked against interface.outputs${undeclared > 0 ? `, ${undeclared} without a declared outputs schema` : ""}`;
  return { name: "recipe_outputs", ok: findings.length === 0, evidence: [summary, ...capped(findings)] };
}

import type { EngineEvent } from "../contracts/events.ts";
import { isRetrievedRefs, retrievedCounts } from "../contracts/memory.ts";
import { singleLine } from "../errors.ts";
import { printable } from "./printable.ts";

const fmt = (value: number) => value.toFixed(2);

/**
 * One human-readable line (or none) per event, for `conclave send` and
 * `conclave events`. Lines are indented by pipeline depth. What the event
 * carries (a user's message, an agent's claims, a reply) is shown through
 * {@link printable}: no control sequence it holds reaches the terminal.
 */
export function renderEvent(event: EngineEvent): string | null {
  const line = describeEvent(event);
  return line === null ? null : printable(line);
}

/** The line {@link renderEvent} shows for `event` (or null), before {@link printable}: the caller makes it safe. */
export function describeEvent(event: EngineEvent): string | null {
  switch (event.kind) {
    case "TURN_STARTED":
      return `turn ${event.session_id}/${event.turn_id}: "${event.payload.user_input}"`;
    case "TURN_QUEUED":
      return `turn ${event.session_id}/${event.turn_id}: waiting for a place (position ${event.payload.position})`;
    case "TURN_STAGE_CHANGED":
      return `  ▸ ${event.payload.stage}`;
    case "SENSORS_FAST_UPDATED": {
      const fired = Object.entries(event.payload.sensors).filter(([, value]) => value > 0);
      return `      sensors: ${fired.length > 0 ? fired.map(([name, value]) => `${name} ${fmt(value)}`).join(", ") : "none fired"}`;
    }
    case "SAFETY_INTERRUPT":
      return `  ⚠ safety interrupt: ${event.payload.sensor} ${fmt(event.payload.value)}`;
    case "MEMORY_RETRIEVED": {
      // The log names what was retrieved, by reference (its text lives in the memory store, while it is kept).
      const { episodes, facts, threads } = retrievedCounts(event.payload);
      const by = isRetrievedRefs(event.payload) ? " (by reference: read from memory while kept)" : "";
      return `      memory: ${episodes} episode(s), ${facts} fact(s), ${threads} open thread(s)${by}`;
    }
    case "SCHEDULE_PLANNED": {
      const { skipped, budget } = event.payload;
      return `      scheduler: ${budget.planned} of ${budget.limit} tokens planned${skipped.length > 0 ? `; skipped ${skipped.map((s) => `${s.agent_id} (${s.reason})`).join(", ")}` : ""}`;
    }
    case "WAVE_STARTED":
      return `      wave ${event.payload.wave}: ${event.payload.agents.join(", ")}`;
    case "STEP_TIMED": {
      const { step, agent_id, elapsed_ms, ok } = event.payload;
      return `        ⏱ ${step}${agent_id ? ` ${agent_id}` : ""}: ${fmt(elapsed_ms)} ms${ok ? "" : " (failed)"}`;
    }
    case "AGENT_COMPLETED": {
      const { output, contribution } = event.payload;
      const said = [
        ...contribution.claims.map((claim) => `claim "${claim.text}"`),
        ...contribution.proposals.map((p) => `${p.kind} "${p.text}"`),
      ];
      // An agent with an output of its own (not only the council contract) shows it too.
      const own = output === undefined ? "" : JSON.stringify(output);
      if (own !== "" && own !== JSON.stringify(contribution)) said.push(`output ${singleLine(own, 200)}`);
      return `        ✓ ${event.payload.agent_id} (${fmt(event.payload.elapsed_ms)} ms on ${event.payload.worker})${said.length > 0 ? `: ${said.join("; ")}` : ""}`;
    }
    case "TOOL_CALL_REQUESTED":
      return `          ⚙ ${event.payload.agent_id} calls ${event.payload.tool}(${singleLine(JSON.stringify(event.payload.args) ?? "", 160)})`;
    case "TOOL_CALL_DENIED":
      return `          ⚙ ${event.payload.tool} refused: ${event.payload.refusal}: ${singleLine(event.payload.message, 200)}`;
    case "TOOL_CALL_FINISHED": {
      const { tool, ok, elapsed_ms } = event.payload;
      const simulated = event.payload.simulated ? " (simulated)" : "";
      return ok
        ? `          ⚙ ${tool} → ${singleLine(JSON.stringify(event.payload.result) ?? "(nothing)", 200)} (${fmt(elapsed_ms)} ms)${simulated}`
        : `          ⚙ ${tool} failed: ${event.payload.error?.code ?? "error"}: ${singleLine(event.payload.error?.message ?? "", 200)}`;
    }
    case "TOOL_CALL_ROLLED_BACK":
      return `  ↶ ${event.payload.tool} (${event.payload.call_id}) ${event.payload.ok ? "rolled back" : `not rolled back: ${event.payload.error ?? ""}`}`;
    case "AGENT_DELEGATED":
      return `          ↪ ${event.payload.agent_id} asked ${event.payload.to}${event.payload.ok ? "" : `: failed: ${event.payload.error?.message ?? ""}`}`;
    case "AGENT_FAILED":
      return `        ✗ ${event.payload.agent_id}: ${event.payload.code}: ${event.payload.message}`;
    case "STANCE_UPDATED":
      return `      stance: ${Object.entries(event.payload.current)
        .map(([name, value]) => `${name} ${fmt(value)}`)
        .join(", ")}`;
    case "CONSENSUS_UPDATED":
      return `      round ${event.payload.round}: consensus ${fmt(event.payload.level)} over ${event.payload.claims.length} claim(s)`;
    case "COUNCIL_DECISION_MADE":
      return `      council: ${event.payload.speak ? "speak" : "stay silent"} · intent ${event.payload.intent} · urgency ${event.payload.urgency}${event.payload.key_points.length > 0 ? ` · ${event.payload.key_points.length} key point(s)` : ""}`;
    case "VOICE_RENDERED":
      return `      voice: rendering ${event.payload.attempt}, ${event.payload.text.length} characters`;
    case "CRITICS_UPDATED":
      return `      critics (rendering ${event.payload.attempt}): ${event.payload.results.map((result) => `${result.critic} ${result.passed ? "✓" : `✗ ${result.feedback}`}`).join(", ")}`;
    case "DELIB_ROUND_COMPLETED": {
      const changed = event.payload.revisions.filter((r) => r.withdrew.length + r.conceded.length > 0);
      return changed.length === 0
        ? null
        : `      revisions: ${changed.map((r) => `${r.agent_id}${r.withdrew.length > 0 ? ` withdrew ${r.withdrew.join(", ")}` : ""}${r.conceded.length > 0 ? ` conceded ${r.conceded.join(", ")}` : ""}`).join("; ")}`;
    }
    case "MEMORY_COMMITTED":
      return `      memory: ${event.payload.summary}`;
    case "STAGE_WARNING":
      return `      ! ${event.payload.stage}: ${event.payload.code}: ${event.payload.message}`;
    case "RECIPE_STARTED": {
      const { provenance } = event.payload;
      const by = provenance.generated_by
        ? ` · generated by ${provenance.generated_by}${provenance.confidence_score !== undefined ? ` (confidence ${provenance.confidence_score})` : ""}`
        : "";
      return `  recipe ${event.payload.recipe}${event.payload.version ? ` ${event.payload.version}` : ""} (${event.payload.shape}, ${event.payload.execution_mode})${by}`;
    }
    case "PREFLIGHT_CHECKED":
      return event.payload.passed && event.payload.warnings.length === 0
        ? null
        : `  ${event.payload.passed ? "◐" : "✘"} pre-flight: ${[...event.payload.failures, ...event.payload.warnings].map((item) => item.message).join("; ")}`;
    case "NODE_STARTED":
      return `  ▸ ${event.payload.node} (${event.payload.kind})`;
    case "NODE_COMPLETED":
      return `      ✓ ${event.payload.node}${event.payload.output_key ? ` → ${event.payload.output_key}` : ""}: ${singleLine(JSON.stringify(event.payload.output) ?? "", 200)}`;
    case "NODE_FAILED":
      return `      ✗ ${event.payload.node} (attempt ${event.payload.attempt}): ${event.payload.code}: ${event.payload.message}${event.payload.retrying ? " — trying again" : ""}`;
    case "ROUTE_TAKEN":
      return `      → ${event.payload.to} (${event.payload.reason})`;
    case "EVALUATION_SCORED":
      return `      score ${fmt(event.payload.score)} ${event.payload.passed ? "passes" : "below the threshold"}${event.payload.critique ? `: ${event.payload.critique}` : ""}`;
    case "HUMAN_INPUT_REQUESTED":
      return `      ? ${event.payload.prompt}${event.payload.required_role ? ` (role ${event.payload.required_role})` : ""}`;
    case "TURN_SUSPENDED":
      return `  ⏸ suspended at '${event.payload.node}'${event.payload.expires_at ? ` until ${new Date(event.payload.expires_at).toISOString()}` : ""}`;
    case "HUMAN_INPUT_RECEIVED":
      return event.payload.timed_out
        ? `  ▶ '${event.payload.node}': nobody answered in time`
        : `  ▶ '${event.payload.node}' answered by ${event.payload.user_id ?? "someone"}: ${singleLine(JSON.stringify(event.payload.answer) ?? "", 200)}`;
    case "REQUEST_INTERCEPTED":
      return `      ✂ ${event.payload.interceptor}: ${event.payload.action} (${event.payload.reason})`;
    case "TURN_COMPLETED": {
      const { outcome } = event.payload;
      const status =
        outcome.status === "Complete"
          ? "✔ Complete"
          : outcome.status === "PartialSuccess"
            ? `◐ PartialSuccess (${outcome.warnings.length} warning(s))`
            : outcome.status === "Cancelled"
              ? `⊘ Cancelled: ${outcome.reason}`
              : `✘ Failed: ${outcome.error.code}: ${outcome.error.message}`;
      const { usage } = event.payload;
      const cost =
        usage.prompt_tokens + usage.completion_tokens > 0
          ? `\n  tokens: ${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion (${Object.entries(
              usage.by_actor,
            )
              .map(([actor, used]) => `${actor} ${used.prompt_tokens + used.completion_tokens}`)
              .join(", ")})`
          : "";
      // A recipe run's result is its blackboard (`output`), which `conclave run` prints whole.
      const reply = event.payload.output === undefined ? `\n  reply: ${event.payload.response || "(no reply)"}` : "";
      return `  ${status} in ${event.payload.total_time_ms} ms${cost}${reply}`;
    }
    default:
      return null;
  }
}

import type { EngineEvent } from "../contracts/events.ts";
import { singleLine } from "../errors.ts";

const fmt = (value: number) => value.toFixed(2);

/**
 * One human-readable line (or none) per event, for `conclave send` and
 * `conclave events`. Lines are indented by pipeline depth.
 */
export function renderEvent(event: EngineEvent): string | null {
  switch (event.kind) {
    case "TURN_STARTED":
      return `turn ${event.session_id}/${event.turn_id}: "${event.payload.user_input}"`;
    case "TURN_STAGE_CHANGED":
      return `  ▸ ${event.payload.stage}`;
    case "SENSORS_FAST_UPDATED": {
      const fired = Object.entries(event.payload.sensors).filter(([, value]) => value > 0);
      return `      sensors: ${fired.length > 0 ? fired.map(([name, value]) => `${name} ${fmt(value)}`).join(", ") : "none fired"}`;
    }
    case "SAFETY_INTERRUPT":
      return `  ⚠ safety interrupt: ${event.payload.sensor} ${fmt(event.payload.value)}`;
    case "MEMORY_RETRIEVED":
      return `      memory: ${event.payload.episodes.length} recent episode(s)`;
    case "SCHEDULE_PLANNED": {
      const { skipped, budget } = event.payload;
      return `      scheduler: ${budget.planned} of ${budget.limit} tokens planned${skipped.length > 0 ? `; skipped ${skipped.map((s) => `${s.agent_id} (${s.reason})`).join(", ")}` : ""}`;
    }
    case "WAVE_STARTED":
      return `      wave ${event.payload.wave}: ${event.payload.agents.join(", ")}`;
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
      return `  ${status} in ${event.payload.total_time_ms} ms${cost}\n  reply: ${event.payload.response || "(no reply)"}`;
    }
    default:
      return null;
  }
}

/**
 * Prints events as they arrive: JSON lines, or the readable view, where the
 * voice's streams are written inline, token by token, as they are produced.
 * Agents' streams (`<agent>:<name>`, several may be open at once) are printed
 * whole when each ends.
 */
export function createEventPrinter(
  json: boolean | undefined,
  out: NodeJS.WritableStream = process.stdout,
): (event: EngineEvent) => void {
  const agentStreams = new Map<string, string>();
  return (event) => {
    if (json) {
      out.write(`${JSON.stringify(event)}\n`);
      return;
    }
    const streamId = "stream_id" in event.payload ? event.payload.stream_id : "";
    if (streamId.includes(":") && (event.kind === "STREAM_START" || event.kind === "STREAM_CHUNK")) {
      agentStreams.set(
        streamId,
        (agentStreams.get(streamId) ?? "") + (event.kind === "STREAM_CHUNK" ? event.payload.delta : ""),
      );
    } else if (streamId.includes(":") && event.kind === "STREAM_END") {
      out.write(`        ${streamId} › ${agentStreams.get(streamId) ?? ""}\n`);
      agentStreams.delete(streamId);
    } else if (event.kind === "STREAM_START")
      out.write(`      ${event.payload.stream_id === "thinking" ? "thinking" : "voice"} › `);
    else if (event.kind === "STREAM_CHUNK") out.write(event.payload.delta);
    else if (event.kind === "STREAM_END") out.write("\n");
    else {
      const line = renderEvent(event);
      if (line !== null) out.write(`${line}\n`);
    }
  };
}

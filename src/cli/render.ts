import type { EngineEvent } from "../contracts/events.ts";

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
    case "WAVE_STARTED":
      return `      wave ${event.payload.wave}: ${event.payload.agents.join(", ")}`;
    case "AGENT_COMPLETED": {
      const { output } = event.payload;
      const said = [
        ...output.claims.map((claim) => `claim "${claim.text}"`),
        ...output.proposals.map((p) => `${p.kind} "${p.text}"`),
      ];
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
      return `      voice: ${event.payload.text.length} characters`;
    case "CRITICS_UPDATED":
      return `      critics: ${event.payload.results.map((result) => `${result.critic} ${result.passed ? "✓" : `✗ (${result.feedback})`}`).join(", ")}`;
    case "MEMORY_COMMITTED":
      return `      memory: ${event.payload.summary}`;
    case "STAGE_WARNING":
      return `      ! ${event.payload.stage}: ${event.payload.code}: ${event.payload.message}`;
    case "TURN_COMPLETED": {
      const { outcome } = event.payload;
      const status =
        outcome.status === "Complete" ? "✔ Complete" : `◐ PartialSuccess (${outcome.warnings.length} warning(s))`;
      return `  ${status} in ${event.payload.total_time_ms} ms\n  reply: ${event.payload.response || "(no reply)"}`;
    }
    default:
      return null;
  }
}

/** Prints an event as a JSON line, or as its readable line when it has one. */
export function printEvent(event: EngineEvent, json: boolean | undefined): void {
  const line = json ? JSON.stringify(event) : renderEvent(event);
  if (line !== null) console.log(line);
}

import { printable } from "../client/printable.ts";
import { describeEvent, renderEvent } from "../client/renderEvent.ts";
import type { EngineEvent } from "../contracts/events.ts";

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
      out.write(`        ${printable(streamId)} › ${printable(agentStreams.get(streamId) ?? "")}\n`);
      agentStreams.delete(streamId);
    } else if (event.kind === "STREAM_START")
      out.write(`      ${event.payload.stream_id === "thinking" ? "thinking" : "voice"} › `);
    else if (event.kind === "STREAM_CHUNK") out.write(printable(event.payload.delta));
    else if (event.kind === "STREAM_END") out.write("\n");
    else {
      const line = renderEvent(event);
      if (line !== null) out.write(`${line}\n`);
    }
  };
}

/** An event read back with where and when it was stored (`conclave events query`). */
interface LoggedLine {
  position: number;
  time: string;
  event: EngineEvent;
}

/** What one event says, on one line: its readable view, or a stream's text. */
function eventSummary(event: EngineEvent): string {
  switch (event.kind) {
    case "STREAM_START":
      return `${event.payload.stream_id} opens (${event.payload.content_type})`;
    case "STREAM_CHUNK": {
      const { delta } = event.payload;
      return `${event.payload.stream_id} › ${JSON.stringify(delta.length > 120 ? `${delta.slice(0, 119)}…` : delta)}`;
    }
    case "STREAM_END":
      return `${event.payload.stream_id} ends (${event.payload.chunks} chunks)`;
    default:
      return (describeEvent(event) ?? "")
        .split("\n")
        .map((part) => part.trim())
        .filter(Boolean)
        .join(" · ");
  }
}

/**
 * One line per event of `conclave events query`: its position, stored time,
 * turn and seq, kind, and what it says (through {@link printable}, on one line).
 */
export function renderLoggedEvent({ position, time, event }: LoggedLine): string {
  const summary = eventSummary(event);
  return printable(
    `#${position} ${time} turn ${event.turn_id}.${event.seq} ${event.kind}${summary ? `  ${summary}` : ""}`,
    { newlines: false },
  );
}

/**
 * One line per search hit of `conclave events search`: position, turn, kind
 * and the excerpt, the matched words marked: bold on a terminal, else «word».
 */
export function renderSearchHit(
  hit: LoggedLine & { excerpt: string; highlights: readonly (readonly [number, number])[] },
  terminal = process.stdout.isTTY === true,
): string {
  const [open, close] = terminal ? ["\x1b[1m", "\x1b[22m"] : ["«", "»"];
  const safe = (text: string) => printable(text, { newlines: false });
  let excerpt = "";
  let at = 0;
  for (const [start, end] of hit.highlights) {
    excerpt += `${safe(hit.excerpt.slice(at, start))}${open}${safe(hit.excerpt.slice(start, end))}${close}`;
    at = end;
  }
  excerpt += safe(hit.excerpt.slice(at));
  return `#${hit.position} turn ${hit.event.turn_id}.${hit.event.seq} ${hit.event.kind}: ${excerpt}`;
}

/** Bytes for a person: `812 B`, `12.3 KiB`, `4.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

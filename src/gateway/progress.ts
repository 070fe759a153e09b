/**
 * A call's events as MCP progress notifications: one per event worth a line
 * (a stage, a node, an agent's answer, a route…, worded as `conclave send`
 * prints them), and one per batch of stream chunks (the text said since the
 * last notification), so a client sees the reply being written without a
 * notification per token.
 */
import { printable } from "../client/printable.ts";
import { renderEvent } from "../client/renderEvent.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { singleLine } from "../errors.ts";

/** How long stream chunks are gathered before they are sent as one notification, in ms. */
export const CHUNK_BATCH_MS = 100;

/** A progress notification's fields (MCP `notifications/progress`). */
export interface ProgressUpdate {
  progress: number;
  message: string;
}

/** Turns a call's events into progress updates; `send` gets each one (and must not throw). */
export interface ProgressReporter {
  /** One of the call's events, as it comes. */
  event(event: EngineEvent): void;
  /** Sends what is still gathered (at the call's end). */
  flush(): void;
}

/** A reporter that reports nothing: the client asked for no progress (no progressToken). */
export const SILENT: ProgressReporter = { event() {}, flush() {} };

/** Longest message of one notification, in characters. */
const MAX_MESSAGE = 1_000;

/** A reporter sending updates numbered 1, 2, 3… through `send`. */
export function progressReporter(send: (update: ProgressUpdate) => void): ProgressReporter {
  let progress = 0;
  const emit = (message: string) => {
    progress += 1;
    send({ progress, message: singleLine(message, MAX_MESSAGE) });
  };
  /** The chunks gathered, of one stream at a time. */
  let gathered: { stream: string; text: string } | null = null;
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (gathered && gathered.text !== "") emit(`${streamLabel(gathered.stream)} › ${gathered.text}`);
    gathered = null;
  };
  return {
    event(event) {
      if (event.kind === "STREAM_CHUNK") {
        const stream = event.payload.stream_id;
        if (gathered && gathered.stream !== stream) flush();
        gathered ??= { stream, text: "" };
        gathered.text += event.payload.delta;
        timer ??= setTimeout(flush, CHUNK_BATCH_MS);
        return;
      }
      if (event.kind === "STREAM_START") return;
      flush();
      if (event.kind === "STREAM_END") return;
      const line = renderEvent(event);
      if (line !== null && line.trim() !== "") emit(line.trim());
    },
    flush,
  };
}

/**
 * A reporter of stage changes only, for a client that shows a task's status
 * rather than a log (A2A's `working` updates): `stage <name>` when a turn
 * enters a stage, `node <name> (<kind>)` when a recipe run starts a node.
 * Agents' answers, stream chunks and the rest are left out.
 */
export function stageReporter(send: (update: ProgressUpdate) => void): ProgressReporter {
  let progress = 0;
  let last = "";
  return {
    event(event) {
      let line: string;
      if (event.kind === "TURN_STAGE_CHANGED") line = `stage ${event.payload.stage}`;
      else if (event.kind === "NODE_STARTED") line = `node ${event.payload.node} (${event.payload.kind})`;
      else return;
      if (line === last) return;
      last = line;
      progress += 1;
      send({ progress, message: singleLine(printable(line), MAX_MESSAGE) });
    },
    flush() {},
  };
}

/** `voice`, `thinking`, or an agent's `<node>:<stream>` as it is. */
function streamLabel(stream: string): string {
  return stream.includes(":") || stream === "thinking" ? stream : "voice";
}

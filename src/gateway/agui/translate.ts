/**
 * A Conclave turn's events as AG-UI events. The voice's reply stream becomes
 * one text message (TEXT_MESSAGE_START, a CONTENT per chunk, END); a tool
 * call an agent makes becomes TOOL_CALL_START/ARGS/END, and its end a
 * TOOL_CALL_RESULT; each stage is a step (STEP_STARTED/FINISHED) and a
 * STATE_DELTA on a small shared state, `{stage, agents}`. The other events
 * (the council's workings, memory, critics…) have no AG-UI counterpart and
 * are not sent.
 */
import { type BaseEvent, EventType } from "@ag-ui/core";
import type { EngineEvent } from "../../contracts/events.ts";

/** The state an AG-UI client holds of a turn: the stage it is in, and each agent of its waves. */
export interface AguiTurnState {
  stage: string | null;
  agents: Record<string, "running" | "done" | "failed">;
}

/** The voice's stream of the reply (its other stream, `thinking`, is not the reply). */
const REPLY_STREAM = "default";

/** A JSON Pointer's token for `key` (RFC 6901). */
const pointerToken = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

/** Translates the events of one turn, in order; keeps what a well-formed AG-UI stream must close. */
export class TurnToAgui {
  /** The text message of the reply being written, if one is open. */
  private openMessage: string | null = null;
  private messages = 0;
  private openStep: string | null = null;
  /** The reply's text as sent, of every message (a stream started over sends a new message). */
  private sent = "";
  readonly state: AguiTurnState = { stage: null, agents: {} };

  constructor(private readonly runId: string) {}

  /** The state to start from, sent once after RUN_STARTED: every STATE_DELTA applies to it. */
  snapshot(): BaseEvent {
    return { type: EventType.STATE_SNAPSHOT, snapshot: structuredClone(this.state) } as BaseEvent;
  }

  /** The AG-UI events for one of the turn's events (often none). */
  translate(event: EngineEvent): BaseEvent[] {
    switch (event.kind) {
      case "TURN_STAGE_CHANGED":
        return this.stage(event.payload.stage);
      case "STREAM_START":
        if (event.payload.stream_id !== REPLY_STREAM) return [];
        // A stream started again (a takeover, another rendering) is a new message: what was sent cannot be taken back.
        return [...this.endMessage(), this.startMessage()];
      case "STREAM_CHUNK": {
        if (event.payload.stream_id !== REPLY_STREAM || event.payload.delta === "") return [];
        const start = this.openMessage === null ? [this.startMessage()] : [];
        this.sent += event.payload.delta;
        return [
          ...start,
          {
            type: EventType.TEXT_MESSAGE_CONTENT,
            messageId: this.openMessage,
            delta: event.payload.delta,
          } as BaseEvent,
        ];
      }
      case "STREAM_END":
        return event.payload.stream_id === REPLY_STREAM ? this.endMessage() : [];
      case "WAVE_STARTED":
        return [
          this.delta(
            event.payload.agents.map((agent) => {
              const op = Object.hasOwn(this.state.agents, agent) ? "replace" : "add";
              this.state.agents[agent] = "running";
              return { op, path: `/agents/${pointerToken(agent)}`, value: "running" };
            }),
          ),
        ];
      case "AGENT_COMPLETED":
      case "AGENT_FAILED": {
        const status = event.kind === "AGENT_COMPLETED" ? "done" : "failed";
        const agent = event.payload.agent_id;
        const op = Object.hasOwn(this.state.agents, agent) ? "replace" : "add";
        this.state.agents[agent] = status;
        return [this.delta([{ op, path: `/agents/${pointerToken(agent)}`, value: status }])];
      }
      case "TOOL_CALL_REQUESTED": {
        const { call_id, tool, args } = event.payload;
        return [
          { type: EventType.TOOL_CALL_START, toolCallId: call_id, toolCallName: tool } as BaseEvent,
          { type: EventType.TOOL_CALL_ARGS, toolCallId: call_id, delta: JSON.stringify(args ?? {}) } as BaseEvent,
          { type: EventType.TOOL_CALL_END, toolCallId: call_id } as BaseEvent,
        ];
      }
      case "TOOL_CALL_DENIED":
        return [this.toolResult(event.payload.call_id, { ok: false, error: event.payload.message })];
      case "TOOL_CALL_FINISHED": {
        const { call_id, ok, result, error } = event.payload;
        return [this.toolResult(call_id, ok ? { ok, result } : { ok, error })];
      }
      default:
        return [];
    }
  }

  /**
   * What closes the stream before RUN_FINISHED: the open message and step.
   * When no chunk of the reply came (a voice that did not stream), the reply
   * is sent here as one message, so the client always gets it.
   */
  finish(response: string): BaseEvent[] {
    const events = [...this.endMessage()];
    if (this.sent === "" && response !== "") {
      events.push(this.startMessage());
      events.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.openMessage, delta: response } as BaseEvent);
      this.sent = response;
      events.push(...this.endMessage());
    }
    events.push(...this.endStep());
    return events;
  }

  private stage(stage: string): BaseEvent[] {
    const events = this.endStep();
    this.openStep = stage;
    this.state.stage = stage;
    events.push({ type: EventType.STEP_STARTED, stepName: stage } as BaseEvent);
    events.push(this.delta([{ op: "replace", path: "/stage", value: stage }]));
    return events;
  }

  private endStep(): BaseEvent[] {
    if (this.openStep === null) return [];
    const stepName = this.openStep;
    this.openStep = null;
    return [{ type: EventType.STEP_FINISHED, stepName } as BaseEvent];
  }

  private startMessage(): BaseEvent {
    this.messages += 1;
    this.openMessage = this.messages === 1 ? `${this.runId}-reply` : `${this.runId}-reply-${this.messages}`;
    return { type: EventType.TEXT_MESSAGE_START, messageId: this.openMessage, role: "assistant" } as BaseEvent;
  }

  private endMessage(): BaseEvent[] {
    if (this.openMessage === null) return [];
    const messageId = this.openMessage;
    this.openMessage = null;
    return [{ type: EventType.TEXT_MESSAGE_END, messageId } as BaseEvent];
  }

  private delta(delta: { op: string; path: string; value: unknown }[]): BaseEvent {
    return { type: EventType.STATE_DELTA, delta } as BaseEvent;
  }

  private toolResult(toolCallId: string, content: unknown): BaseEvent {
    return {
      type: EventType.TOOL_CALL_RESULT,
      messageId: `${this.runId}-tool-${toolCallId}`,
      toolCallId,
      content: JSON.stringify(content),
      role: "tool",
    } as BaseEvent;
  }
}

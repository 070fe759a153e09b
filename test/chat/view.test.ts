import { renderToString } from "ink";
import { createElement as h } from "react";
import { describe, expect, it } from "vitest";
import { type ChatAction, type ChatState, chatReducer, initialChatState } from "../../src/chat/state.ts";
import { ChatView } from "../../src/chat/view.ts";
import type { EngineEvent, EventBody } from "../../src/contracts/events.ts";

// ink's own string renderer: the same tree the terminal gets, as text.
const screen = (state: ChatState) => renderToString(h(ChatView, { state }), { columns: 120 });

const event = (body: EventBody, seq = 0): ChatAction => ({
  type: "event",
  event: { session_id: "demo", turn_id: 1, seq, ts_monotonic: seq, ...body } as EngineEvent,
});

const midTurn = [
  { type: "typed", text: "I'm stressed" },
  { type: "submitted" },
  { type: "accepted", turnId: 1 },
  event({ kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } }),
  event({ kind: "TURN_STAGE_CHANGED", payload: { stage: "agents" } }),
  event({ kind: "WAVE_STARTED", payload: { wave: 0, agent_count: 2, agents: ["emotion.stress", "social.repair"] } }),
  event({ kind: "AGENT_FAILED", payload: { wave: 0, agent_id: "social.repair", code: "timeout", message: "late" } }),
  event({ kind: "DELIB_ROUND_STARTED", payload: { round: 0 } }),
  event({ kind: "CONSENSUS_UPDATED", payload: { round: 0, level: 0.75, claims: [] } }),
  event({
    kind: "COUNCIL_DECISION_MADE",
    payload: { speak: true, urgency: "normal", intent: "support", key_points: [], do_not: [], thinking: "" },
  }),
  event({ kind: "STREAM_CHUNK", payload: { stream_id: "thinking", index: 0, delta: "keep it short" } }),
  event({ kind: "STREAM_CHUNK", payload: { stream_id: "default", index: 0, delta: "That sounds" } }),
  event({
    kind: "CRITICS_UPDATED",
    payload: {
      attempt: 1,
      passed: false,
      results: [
        { critic: "coherence", passed: false, score: 0.3, feedback: "Acknowledge first." },
        { critic: "safety", passed: true, score: 1, feedback: "" },
      ],
    },
  }),
  event({ kind: "STAGE_WARNING", payload: { stage: "agents", code: "timeout", message: "social.repair was late" } }),
  { type: "typed", text: "and then" },
] satisfies ChatAction[];

describe("the chat screen", () => {
  it("shows the running turn: stage, agents, rounds, council, streams, critics, warnings, input and status", () => {
    const text = screen(midTurn.reduce(chatReducer, initialChatState("demo")));
    expect(text).toContain("you › I'm stressed");
    expect(text).toContain("── turn 1 ──");
    expect(text).toMatch(/stage +✓ ingest {2}· sensing_fast {2}· context {2}▸ agents {2}· deliberation/);
    expect(text).toMatch(/agents +▸ emotion\.stress {2}✗ social\.repair \(timeout: late\)/);
    expect(text).toMatch(/rounds +round 0: consensus 0\.75 \(0 claims\)/);
    expect(text).toMatch(/council +speak · intent support · urgency normal/);
    expect(text).toMatch(/thinking +keep it short/);
    expect(text).toMatch(/reply +That sounds/);
    expect(text).toMatch(/critics +#1 rejected: ✗ coherence: Acknowledge first\. · ✓ safety/);
    expect(text).toMatch(/warnings +! agents: timeout: social\.repair was late/);
    expect(text).toContain("› and then");
    expect(text.trimEnd().split("\n").at(-1)).toBe("session demo · turn 1 · agents · Ctrl-C cancels");
  });

  it("once the turn completed, the reply is in the history and the panel shows the outcome", () => {
    const state = [
      ...midTurn,
      event({
        kind: "TURN_COMPLETED",
        payload: {
          total_time_ms: 42,
          response: "That sounds hard.",
          outcome: { status: "Complete" },
          usage: { prompt_tokens: 0, completion_tokens: 0, by_actor: {} },
        },
      }),
    ].reduce(chatReducer, initialChatState("demo"));
    const text = screen(state);
    expect(text).toContain("conclave › That sounds hard.");
    expect(text).toMatch(/outcome +✔ Complete in 42 ms/);
    expect(text).not.toMatch(/reply +That sounds/);
    expect(text).toMatch(/agents +· emotion\.stress/);
    expect(text.trimEnd().split("\n").at(-1)).toBe("session demo · Enter sends · Ctrl-C quits");
  });

  it("shows a cancelled turn as cancelled", () => {
    const actions: ChatAction[] = [
      ...midTurn,
      { type: "interrupted" },
      event({
        kind: "TURN_COMPLETED",
        payload: {
          total_time_ms: 42,
          response: "",
          outcome: { status: "Cancelled", reason: "cancelled by the user" },
          usage: { prompt_tokens: 0, completion_tokens: 0, by_actor: {} },
        } as never,
      }),
    ];
    const text = screen(actions.reduce(chatReducer, initialChatState("demo")));
    expect(text).toContain("turn 1: ✘ cancelled: cancelled by the user");
    expect(text).toMatch(/outcome +✘ cancelled/);
  });
});

import { describe, expect, it } from "vitest";
import { type KeyPress, keyActions } from "../../src/chat/keys.ts";
import {
  type ChatAction,
  type ChatState,
  chatReducer,
  initialChatState,
  interruptIntent,
  pastTurns,
  stageMarks,
  statusLine,
} from "../../src/chat/state.ts";
import type { EngineEvent, EventBody } from "../../src/contracts/events.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { runLocalTurn } from "../helpers/turns.ts";

/** A turn's record as the event log stores it. */
const stored = (records: (TurnRecord | EventBody)[], turnId = 1): EngineEvent[] =>
  records.map(
    (record, seq) =>
      ({
        session_id: "s",
        turn_id: turnId,
        seq,
        ts_monotonic: seq,
        ...record,
        ...(record.kind === "TURN_COMPLETED" ? { payload: { total_time_ms: 12, ...record.payload } } : {}),
      }) as EngineEvent,
  );

const reduce = (state: ChatState, ...actions: ChatAction[]) => actions.reduce(chatReducer, state);
const events = (list: EngineEvent[]): ChatAction[] => list.map((event) => ({ type: "event", event }));
const send = (state: ChatState, text: string) => reduce(state, { type: "typed", text }, { type: "submitted" });

const completed = (outcome: unknown, response = ""): EventBody =>
  ({ kind: "TURN_COMPLETED", payload: { response, outcome, usage: {} } }) as unknown as EventBody;

describe("the chat reducer, over a real turn's events", () => {
  it("follows a whole turn: stages, agents, rounds, council, the streamed reply, critics, then the reply in the history", async () => {
    const { records } = await runLocalTurn("I'm feeling stressed and overwhelmed by my deadline");
    const turn = stored(records);
    let state = send(initialChatState("s"), "I'm feeling stressed and overwhelmed by my deadline");
    expect(state.phase).toBe("submitting");
    expect(state.input).toBe("");
    expect(state.history).toEqual([
      { id: 1, role: "user", text: "I'm feeling stressed and overwhelmed by my deadline" },
    ]);
    state = reduce(state, { type: "accepted", turnId: 1 });
    expect(state.phase).toBe("running");

    const beforeEnd = reduce(state, ...events(turn.slice(0, -1)));
    expect(beforeEnd.phase).toBe("running");
    const view = beforeEnd.turn!;
    expect(view.stages).toEqual([...STAGES]);
    expect(view.stage).toBe("memory_commit");
    const asked = turn.flatMap((event) => (event.kind === "WAVE_STARTED" ? event.payload.agents : []));
    expect(view.agents.map((agent) => agent.id)).toEqual(asked);
    expect(view.agents.every((agent) => agent.status === "done")).toBe(true);
    expect(view.rounds.length).toBeGreaterThan(0);
    expect(view.rounds.every((round) => round.consensus !== null)).toBe(true);
    expect(view.council?.speak).toBe(true);
    const rendered = turn.filter((event) => event.kind === "VOICE_RENDERED").at(-1);
    expect(view.reply).toBe(rendered?.kind === "VOICE_RENDERED" ? rendered.payload.text : "?");
    expect(view.critics.length).toBeGreaterThan(0);
    expect(view.outcome).toBeNull();

    const done = reduce(beforeEnd, ...events(turn.slice(-1)), { type: "ended" });
    const last = turn.at(-1);
    if (last?.kind !== "TURN_COMPLETED") throw new Error("the turn did not complete");
    expect(done.phase).toBe("idle");
    expect(done.turn?.outcome).toEqual(last.payload.outcome);
    expect(done.history.at(-1)).toEqual({ id: 2, role: "assistant", text: last.payload.response, turnId: 1 });
    expect(stageMarks(done.turn).every(({ mark }) => mark === "done")).toBe(true);
  });

  it("streams the voice chunk by chunk, and a second rendering starts its streams afresh", () => {
    const state = reduce(
      send(initialChatState("s"), "hi"),
      { type: "accepted", turnId: 1 },
      ...events(
        stored([
          { kind: "STREAM_START", payload: { stream_id: "thinking", content_type: "text/plain", attempt: 1 } },
          { kind: "STREAM_CHUNK", payload: { stream_id: "thinking", index: 0, delta: "They are " } },
          { kind: "STREAM_CHUNK", payload: { stream_id: "thinking", index: 1, delta: "stressed" } },
          { kind: "STREAM_START", payload: { stream_id: "default", content_type: "text/plain", attempt: 1 } },
          { kind: "STREAM_CHUNK", payload: { stream_id: "default", index: 0, delta: "A long " } },
          { kind: "STREAM_CHUNK", payload: { stream_id: "default", index: 1, delta: "plan" } },
          { kind: "STREAM_CHUNK", payload: { stream_id: "reasoning.analyst:notes", index: 0, delta: "not shown" } },
        ]),
      ),
    );
    expect(state.turn).toMatchObject({ thinking: "They are stressed", reply: "A long plan" });
    const again = reduce(
      state,
      ...events(
        stored([
          { kind: "STREAM_START", payload: { stream_id: "default", content_type: "text/plain", attempt: 2 } },
          { kind: "STREAM_CHUNK", payload: { stream_id: "default", index: 0, delta: "Short" } },
        ]),
      ),
    );
    expect(again.turn?.reply).toBe("Short");
  });

  it("marks failed agents, keeps every critics verdict and every warning", () => {
    const state = reduce(
      send(initialChatState("s"), "hi"),
      ...events(
        stored([
          { kind: "WAVE_STARTED", payload: { wave: 0, agent_count: 2, agents: ["a.one", "a.two"] } },
          { kind: "AGENT_FAILED", payload: { wave: 0, agent_id: "a.two", code: "timeout", message: "no answer" } },
          {
            kind: "CRITICS_UPDATED",
            payload: {
              attempt: 1,
              passed: false,
              results: [{ critic: "coherence", passed: false, score: 0.2, feedback: "Acknowledge first." }],
            },
          },
          { kind: "CRITICS_UPDATED", payload: { attempt: 2, passed: true, results: [] } },
          { kind: "STAGE_WARNING", payload: { stage: "agents", code: "timeout", message: "a.two timed out" } },
        ]),
      ),
    );
    expect(state.phase).toBe("running");
    expect(state.turn?.agents).toEqual([
      { id: "a.one", wave: 0, status: "running" },
      { id: "a.two", wave: 0, status: "failed", note: "timeout: no answer" },
    ]);
    expect(state.turn?.critics.map((verdict) => [verdict.attempt, verdict.passed])).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(state.turn?.warnings).toEqual([{ stage: "agents", code: "timeout", message: "a.two timed out" }]);
  });

  it("ignores events of another turn and events after the turn settled", () => {
    const running = reduce(send(initialChatState("s"), "hi"), { type: "accepted", turnId: 2 });
    const other = stored([{ kind: "TURN_STAGE_CHANGED", payload: { stage: "agents" } }], 1);
    expect(reduce(running, ...events(other))).toEqual(running);
    const idle = initialChatState("s");
    expect(reduce(idle, ...events(other))).toEqual(idle);
  });
});

describe("Ctrl-C", () => {
  const running = reduce(send(initialChatState("s"), "hi"), { type: "accepted", turnId: 3 });

  it("cancels a running turn, which then shows as cancelled; a second Ctrl-C quits", () => {
    expect(interruptIntent(running)).toBe("cancel");
    const cancelling = reduce(running, { type: "interrupted" });
    expect(cancelling).toMatchObject({ phase: "cancelling", quit: false });
    expect(statusLine(cancelling)).toBe("session s · turn 3 · cancelling… · Ctrl-C again quits");
    const cancelled = reduce(cancelling, ...events(stored([completed({ status: "Cancelled", reason: "user" })], 3)));
    expect(cancelled.phase).toBe("idle");
    expect(cancelled.history.at(-1)).toMatchObject({ role: "notice", text: "turn 3: ✘ cancelled: user" });
    expect(cancelled.history.some((message) => message.role === "assistant")).toBe(false);
    expect(stageMarks(cancelled.turn).filter(({ mark }) => mark !== "pending")).toEqual([]);
    expect(reduce(cancelled, { type: "interrupted" }).quit).toBe(true);
    expect(reduce(cancelling, { type: "interrupted" }).quit).toBe(true);
  });

  it("a turn whose stream ends while cancelling is reported cancelled", () => {
    const atCouncil = reduce(
      running,
      ...events(stored([{ kind: "TURN_STAGE_CHANGED", payload: { stage: "council" } }], 3)),
    );
    const ended = reduce(atCouncil, { type: "interrupted" }, { type: "ended" });
    expect(ended.phase).toBe("idle");
    expect(ended.turn?.stopped).toBe("cancelled");
    expect(stageMarks(ended.turn).find(({ stage }) => stage === "council")?.mark).toBe("stopped");
    expect(ended.history.at(-1)).toMatchObject({ role: "notice", text: "turn 3: ✘ cancelled", tone: "warning" });
  });

  it("quit (SIGTERM, the terminal closed) quits whatever runs", () => {
    expect(reduce(running, { type: "quit" }).quit).toBe(true);
    expect(reduce(initialChatState("s"), { type: "quit" }).quit).toBe(true);
  });

  it("quits at once when no turn runs", () => {
    expect(interruptIntent(initialChatState("s"))).toBe("quit");
    expect(reduce(initialChatState("s"), { type: "interrupted" }).quit).toBe(true);
  });
});

describe("the input line", () => {
  it("edits, and sends only a non-blank line while idle", () => {
    let state = reduce(initialChatState("s"), { type: "typed", text: "héllo" }, { type: "erased" });
    expect(state.input).toBe("héll");
    state = reduce(state, { type: "cleared" }, { type: "typed", text: "   " }, { type: "submitted" });
    expect(state.phase).toBe("idle");
    state = reduce(send(state, "first"), { type: "typed", text: "second" }, { type: "submitted" });
    expect(state.phase).toBe("submitting");
    expect(state.input).toBe("second");
    expect(state.history.map((message) => message.text)).toEqual(["first"]);
    expect(state.hint).toMatch(/a turn is running/);
    expect(statusLine(state)).toContain("a turn is running");
  });

  it("turns keys into actions: Enter, Backspace, Ctrl-U, Ctrl-C, and a paste with line breaks", () => {
    const none: KeyPress = {
      return: false,
      backspace: false,
      delete: false,
      ctrl: false,
      meta: false,
      escape: false,
      tab: false,
      upArrow: false,
      downArrow: false,
      leftArrow: false,
      rightArrow: false,
      pageUp: false,
      pageDown: false,
    };
    expect(keyActions("", { ...none, return: true })).toEqual([{ type: "submitted" }]);
    expect(keyActions("", { ...none, backspace: true })).toEqual([{ type: "erased" }]);
    expect(keyActions("u", { ...none, ctrl: true })).toEqual([{ type: "cleared" }]);
    expect(keyActions("c", { ...none, ctrl: true })).toEqual([{ type: "interrupted" }]);
    expect(keyActions("", { ...none, upArrow: true })).toEqual([]);
    expect(keyActions("one\rtwo\u0007", none)).toEqual([
      { type: "typed", text: "one" },
      { type: "submitted" },
      { type: "typed", text: "two" },
    ]);
  });
});

describe("failures and history", () => {
  it("shows why a submission failed, and the chat stays usable", () => {
    const failed = reduce(send(initialChatState("s"), "hi"), {
      type: "failed",
      message: "no runner is answering: is a runner up?",
    });
    expect(failed.phase).toBe("idle");
    expect(failed.history.at(-1)).toEqual({
      id: 2,
      role: "notice",
      tone: "error",
      text: "not sent: no runner is answering: is a runner up?",
    });
    expect(failed.turn).toBeNull();
    expect(reduce(send(failed, "again"), { type: "accepted", turnId: 1 }).phase).toBe("running");
  });

  it("says so when a turn's events stop before it completed", () => {
    const cut = reduce(send(initialChatState("s"), "hi"), { type: "accepted", turnId: 4 }, { type: "ended" });
    expect(cut.history.at(-1)).toMatchObject({ role: "notice", tone: "error", text: /turn 4: .*stopped/ });
  });

  it("reports a failed turn and a partial success", () => {
    const failed = reduce(
      send(initialChatState("s"), "hi"),
      ...events(stored([completed({ status: "Failed", error: { code: "internal", message: "boom" } })])),
    );
    expect(failed.history.map((message) => message.role)).toEqual(["user", "notice"]);
    expect(failed.history.at(-1)?.text).toBe("turn 1: ✘ Failed: internal: boom");
    const partial = reduce(
      send(initialChatState("s"), "hi"),
      ...events(
        stored([
          completed(
            { status: "PartialSuccess", warnings: [{ stage: "critics", code: "timeout", message: "x" }] },
            "ok",
          ),
        ]),
      ),
    );
    expect(partial.history.map((message) => [message.role, message.text])).toEqual([
      ["user", "hi"],
      ["assistant", "ok"],
      ["notice", "turn 1: ◐ PartialSuccess in 12 ms (1 warning(s))"],
    ]);
  });

  it("reads the conversation back from a session's stored events", async () => {
    const { records } = await runLocalTurn("hello");
    const first = stored(records, 1);
    const reply = first.at(-1)?.kind === "TURN_COMPLETED" ? first.at(-1)?.payload : null;
    const cancelled = stored(
      [
        { kind: "TURN_STARTED", payload: { user_input: "stop me", turn_id: 2 } },
        completed({ status: "Cancelled", reason: "user" }),
      ],
      2,
    );
    const running = stored([{ kind: "TURN_STARTED", payload: { user_input: "still going", turn_id: 3 } }], 3);
    expect(pastTurns([...running, ...first, ...cancelled])).toEqual([
      { turnId: 1, text: "hello", response: reply && "response" in reply ? reply.response : "?" },
      { turnId: 2, text: "stop me", response: null },
      { turnId: 3, text: "still going", response: null },
    ]);
  });

  it("restores the session's earlier turns, oldest first", () => {
    const state = reduce(initialChatState("s"), {
      type: "restored",
      turns: [
        { turnId: 1, text: "hello", response: "hi there" },
        { turnId: 2, text: "still running", response: null },
      ],
    });
    expect(state.history.map((message) => [message.id, message.role, message.text])).toEqual([
      [1, "user", "hello"],
      [2, "assistant", "hi there"],
      [3, "user", "still running"],
    ]);
  });
});

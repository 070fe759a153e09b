/**
 * The recorded-steps wrapper on the real turn machine: a turn is run once in
 * full, its log cut where a runner could have died, and the turn run again
 * from that log. The steps the cut log holds are not asked again, their
 * events are not appended again, and the resumed turn ends as the first did.
 */
import { describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { defaultTurnPolicy } from "../../machines/turn/index.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { applyTurnEvent, newTurnView } from "../../src/chat/turnView.ts";
import { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnOutput, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { emptySnapshot, foldTurn } from "../../src/runtime/replay.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";
import { RecordedSteps, recordedStepsInterceptor } from "../../src/runtime/turnServices/recordedSteps.ts";
import { composeTurnServices } from "../../src/runtime/turnServices/turnInterceptor.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import { label } from "../helpers/turns.ts";

const TEXT = "I'm stressed about my deadline tomorrow, can you help me plan?";
const FAILING_AGENT = "monitoring.anomaly_detector";

/**
 * The offline services, with what a model-backed turn has that they lack: usage on the council and the
 * voice, one agent that fails, and a coherence critic that rejects the first rendering (the voice renders
 * twice). Every call is noted by step in `calls`.
 */
function countedServices(calls: string[]): TurnServices {
  const local = localTurnServices(() => 1_000);
  const usage = { prompt_tokens: 10, completion_tokens: 5 };
  return {
    ...local,
    retrieveMemory: (request, signal) => {
      // A takeover reading back the recorded references (by id, nothing ranked) is no retrieval: noted apart.
      calls.push(request.resolve ? "memory_resolve" : "memory");
      return local.retrieveMemory(request, signal);
    },
    planWaves: (request, signal) => {
      calls.push("schedule");
      return local.planWaves(request, signal);
    },
    callAgent: async (request, signal, options) => {
      calls.push(`agent:${request.wave}:${request.agent_id}`);
      if (request.agent_id === FAILING_AGENT)
        throw new RemoteCallError(`conclave.agent.${FAILING_AGENT}`, "no_responders", "no worker serves it");
      const reply = await local.callAgent(request, signal, options);
      return { ...reply, usage };
    },
    deliberate: (input, signal) => {
      calls.push(`deliberation:${input.round}`);
      return local.deliberate(input, signal);
    },
    decide: async (request, signal) => {
      calls.push("council");
      return { ...(await local.decide(request, signal)), usage };
    },
    renderVoice: async (request, signal, onStream) => {
      calls.push(`voice:${request.attempt}`);
      return { ...(await local.renderVoice(request, signal, onStream)), usage };
    },
    runCritics: async (request, signal) => {
      calls.push(`critics:${request.attempt}`);
      const verdict = await local.runCritics(request, signal);
      if (request.attempt > 1) return verdict;
      const rejected = { critic: "coherence", passed: false, score: 0.2, feedback: "Acknowledge the stress first." };
      return { ...verdict, results: [...verdict.results.filter((r) => r.critic !== "coherence"), rejected] };
    },
    commitMemory: (request, signal) => {
      calls.push("memory_commit");
      return local.commitMemory(request, signal);
    },
  };
}

/** Runs one turn with `services`, appending what `admit` lets through to `log` (seq contiguous after it). */
async function runTurn(
  services: TurnServices,
  log: EngineEvent[],
  admit: (record: TurnRecord) => TurnRecord | null = (record) => record,
): Promise<TurnOutput> {
  const machine = provideTurn(services, (_context, record) => {
    const admitted = admit(record);
    if (!admitted) return;
    const payload = admitted.kind === "TURN_COMPLETED" ? { ...admitted.payload, total_time_ms: 1 } : admitted.payload;
    // Stored as the reader gives it back: through the event schema (a field it lacks would be lost here).
    const event = {
      session_id: "s",
      turn_id: 1,
      seq: log.length,
      ts_monotonic: log.length,
      kind: admitted.kind,
      payload,
    };
    log.push(EngineEvent.parse(event) as EngineEvent);
  });
  const actor = createActor(machine, {
    input: {
      session_id: "s",
      turn_id: 1,
      text: TEXT,
      policy: defaultTurnPolicy,
      modulators: neutralModulators(),
      stance: neutralStance(),
    },
  });
  actor.start();
  return toPromise(actor);
}

/** The whole turn, run once without a takeover. */
async function firstRun() {
  const calls: string[] = [];
  const log: EngineEvent[] = [];
  const output = await runTurn(countedServices(calls), log);
  return { calls, log, output };
}

/** The turn taken over with `stored` in its log: what it asks, and its log once complete. */
async function resume(stored: EngineEvent[]) {
  const calls: string[] = [];
  const steps = new RecordedSteps(stored);
  const log = [...stored];
  const output = await runTurn(
    composeTurnServices(countedServices(calls), [recordedStepsInterceptor(() => steps)]),
    log,
    (record) => steps.admit(record),
  );
  return { calls, log, output };
}

/** The step each call answers, as `calls` names it, from the events that record it. */
function recordedCalls(events: readonly EngineEvent[]): string[] {
  return events.flatMap((event) => {
    switch (event.kind) {
      case "MEMORY_RETRIEVED":
        return ["memory"];
      case "SCHEDULE_PLANNED":
        return ["schedule"];
      case "AGENT_COMPLETED":
      case "AGENT_FAILED":
        return [`agent:${event.payload.wave}:${event.payload.agent_id}`];
      case "DELIB_ROUND_COMPLETED":
        return [`deliberation:${event.payload.round}`];
      case "COUNCIL_DECISION_MADE":
        return ["council"];
      case "VOICE_RENDERED":
        return [`voice:${event.payload.attempt}`];
      case "CRITICS_UPDATED":
        return [`critics:${event.payload.attempt}`];
      case "MEMORY_COMMITTED":
        return ["memory_commit"];
      default:
        return [];
    }
  });
}

const withoutStreams = (events: readonly EngineEvent[]) =>
  events.filter((event) => !event.kind.startsWith("STREAM_")).map(label);

describe("a turn taken over after its last recorded step", () => {
  /** Where a runner may die: just after the nth event of a kind was stored. */
  const cuts: [string, (event: EngineEvent) => boolean][] = [
    ["memory retrieved", (event) => event.kind === "MEMORY_RETRIEVED"],
    ["one agent of the second wave answered", (event) => event.kind === "AGENT_COMPLETED" && event.payload.wave === 1],
    ["a deliberation round completed", (event) => event.kind === "DELIB_ROUND_COMPLETED"],
    ["the council decided", (event) => event.kind === "COUNCIL_DECISION_MADE"],
    ["the critics rejected the first rendering", (event) => event.kind === "CRITICS_UPDATED"],
    ["the second rendering was made", (event) => event.kind === "VOICE_RENDERED" && event.payload.attempt === 2],
    ["the memory commit was made", (event) => event.kind === "MEMORY_COMMITTED"],
  ];

  it.each(cuts)("after %s: asks only what is not recorded, and the log holds each step once", async (_, at) => {
    const first = await firstRun();
    expect(first.calls).toContain("voice:2"); // the critics sent the voice back once
    const cut = first.log.findIndex(at);
    expect(cut).toBeGreaterThan(0);
    const stored = first.log.slice(0, cut + 1);

    const resumed = await resume(stored);
    const recorded = recordedCalls(stored);
    expect(recorded.length).toBeGreaterThan(0);
    // The recorded retrieval is stored by reference, without its text, and read back by them once: not retrieved again.
    const retrieved = stored.find((event) => event.kind === "MEMORY_RETRIEVED");
    expect(retrieved?.payload).toEqual({ refs: { episodes: [], facts: [], threads: [], procedures: [] } });
    expect(resumed.calls.filter((call) => call === "memory_resolve")).toEqual(["memory_resolve"]);
    const asked = resumed.calls.filter((call) => call !== "memory_resolve");
    // Nothing recorded is asked again; everything else is asked once.
    expect(asked.filter((call) => recorded.includes(call))).toEqual([]);
    expect([...recorded, ...asked].sort()).toEqual([...first.calls].sort());
    // The log reads as the uninterrupted turn's: the same events, each once, seq contiguous.
    expect(withoutStreams(resumed.log)).toEqual(withoutStreams(first.log));
    expect(resumed.log.map((event) => event.seq)).toEqual(resumed.log.map((_, index) => index));
    // The same reply, outcome and cost: recorded answers count their tokens.
    expect(resumed.output.response).toBe(first.output.response);
    expect(resumed.output.outcome).toEqual(first.output.outcome);
    const cost = (log: EngineEvent[]) => log.find((event) => event.kind === "TURN_COMPLETED")?.payload;
    expect((cost(resumed.log) as { usage: unknown }).usage).toEqual((cost(first.log) as { usage: unknown }).usage);
  });

  it("restarts a voice stream the takeover cut off, marked so readers drop its earlier chunks", async () => {
    const first = await firstRun();
    const chunk = first.log.findIndex(
      (event) => event.kind === "STREAM_CHUNK" && event.payload.stream_id === "default",
    );
    const stored = first.log.slice(0, chunk + 1);

    const resumed = await resume(stored);
    // The recorded retrieval is read back by reference; then the cut rendering is made again, first of the calls.
    expect(resumed.calls.slice(0, 2)).toEqual(["memory_resolve", "voice:1"]);
    const starts = resumed.log.flatMap((event) =>
      event.kind === "STREAM_START" && event.payload.stream_id === "default" ? [event.payload] : [],
    );
    expect(starts[0]?.restarted).toBeUndefined();
    expect(starts[1]).toMatchObject({ attempt: 1, restarted: true });
    // A reader that starts a stream over at its STREAM_START shows the reply as the uninterrupted turn did.
    const replyAfterFirstRendering = (log: EngineEvent[]) => {
      let view = newTurnView(TEXT);
      for (const event of log.slice(
        0,
        log.findIndex((e) => e.kind === "VOICE_RENDERED"),
      )) {
        view = applyTurnEvent(view, event);
      }
      return view.reply;
    };
    expect(replyAfterFirstRendering(resumed.log)).toBe(replyAfterFirstRendering(first.log));
    expect(resumed.output.response).toBe(first.output.response);
    expect(resumed.log.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
  });

  it("reads a log written before references: the retrieval it embeds is given back as it was, not asked", async () => {
    const first = await firstRun();
    const cut = first.log.findIndex((event) => event.kind === "MEMORY_RETRIEVED");
    const episode = { session_id: "s", turn_id: 1, user_text: "older", response: "reply", intent: "chat", ts: 1 };
    const older = { episodes: [episode], user_facts: ["lives in Lisbon"], open_threads: [] };
    // The older shape, through the event schema as a reader parses it.
    const stored = [
      ...first.log.slice(0, cut),
      EngineEvent.parse({ ...first.log[cut], payload: older }) as EngineEvent,
    ];
    expect(stored.at(-1)?.payload).toEqual(older);

    const resumed = await resume(stored);
    expect(resumed.calls.filter((call) => call.startsWith("memory"))).toEqual(["memory_commit"]);
    expect(resumed.log.filter((event) => event.kind === "MEMORY_RETRIEVED").map((event) => event.payload)).toEqual([
      older,
    ]);
    expect(resumed.output.outcome).toEqual(first.output.outcome);
  });

  it("leaves out what a recorded reference names that is gone since, and says so in a warning", async () => {
    const first = await firstRun();
    const cut = first.log.findIndex((event) => event.kind === "MEMORY_RETRIEVED");
    const refs = { episodes: [7], facts: ["fact.gone"], threads: [], procedures: [] };
    const stored = [
      ...first.log.slice(0, cut),
      EngineEvent.parse({ ...first.log[cut], payload: { refs } }) as EngineEvent,
    ];

    const resumed = await resume(stored);
    expect(resumed.calls.filter((call) => call === "memory" || call === "memory_resolve")).toEqual(["memory_resolve"]);
    const warning = resumed.log.find((event) => event.kind === "STAGE_WARNING" && event.payload.stage === "context");
    expect(warning?.payload).toEqual({
      stage: "context",
      code: "not_found",
      message: "2 retrieved memory item(s) are no longer stored (trimmed, expired or erased): left out",
      subject: "memory",
    });
    expect(resumed.output.outcome.status).toBe("PartialSuccess");
  });

  it("gives a recorded agent failure back as it was, without asking the agent", async () => {
    const first = await firstRun();
    const failed = first.log.find((event) => event.kind === "AGENT_FAILED");
    expect(failed?.payload).toMatchObject({ agent_id: FAILING_AGENT, code: "no_responders" });
    const steps = new RecordedSteps(first.log.slice(0, first.log.indexOf(failed!) + 1));
    const recorded = steps.agent(0, FAILING_AGENT);
    expect(recorded && "failure" in recorded && recorded.failure.code).toBe("no_responders");
    expect(steps.agent(1, FAILING_AGENT)).toBeUndefined();
  });

  it("counts only what follows a TURN_RESUMED that ran the turn again from ingest", async () => {
    const first = await firstRun();
    const council = first.log.findIndex((event) => event.kind === "COUNCIL_DECISION_MADE");
    const restart: EngineEvent = {
      session_id: "s",
      turn_id: 1,
      seq: council + 1,
      ts_monotonic: 0,
      kind: "TURN_RESUMED",
      payload: { attempt: 2, after_seq: council },
    };
    // An attempt abandoned by a runner that ran turns again from ingest: nothing before its TURN_RESUMED counts.
    expect(new RecordedSteps([...first.log.slice(0, council + 1), restart]).decision()).toBeUndefined();
    const goesOn = { ...restart, payload: { ...restart.payload, from: "last_step" as const } };
    expect(new RecordedSteps([...first.log.slice(0, council + 1), goesOn]).decision()?.decision.speak).toBe(true);
  });

  it("is read whole by readers: the session's fold and the chat view keep what precedes TURN_RESUMED", async () => {
    const first = await firstRun();
    const council = first.log.findIndex((event) => event.kind === "COUNCIL_DECISION_MADE");
    const stored = first.log.slice(0, council + 1);
    const resumedAt: EngineEvent = {
      session_id: "s",
      turn_id: 1,
      seq: stored.length,
      ts_monotonic: 0,
      kind: "TURN_RESUMED",
      payload: { attempt: 2, after_seq: council, from: "last_step" },
    };
    const resumed = await resume([...stored, resumedAt]);
    // The sensors and the stance were recorded before the takeover only: they still count.
    expect(foldTurn(emptySnapshot(), resumed.log)).toEqual(foldTurn(emptySnapshot(), first.log));
    const view = resumed.log.reduce(applyTurnEvent, newTurnView(TEXT));
    const uninterrupted = first.log.reduce(applyTurnEvent, newTurnView(TEXT));
    expect({ ...view, attempt: 1 }).toEqual(uninterrupted);
    expect(view.attempt).toBe(2);
  });
});

describe("a taken-over turn's compaction summary", () => {
  const usage = { prompt_tokens: 400, completion_tokens: 20, model: "memory-model" };
  const compacted = (summariser: "model" | "offline"): EngineEvent =>
    EngineEvent.parse({
      session_id: "s",
      turn_id: 5,
      seq: 3,
      ts_monotonic: 3,
      kind: "CONTEXT_COMPACTED",
      payload: {
        summariser,
        reason: "pressure",
        pressure: { level: "compact", ratio: 0.8, usage_tokens: 800, total_tokens: 1000 },
        through_turn: 2,
        turns_compacted: [1, 2],
        tokens_before: 300,
        tokens_after: 20,
        summary: "The user plans a garden.",
        ...(summariser === "model" ? { usage } : {}),
      },
    }) as EngineEvent;
  const read = {
    session_id: "s",
    turn_id: 5,
    user_message: "",
    limit: 0,
    resolve: { episodes: [1, 2, 3, 4], facts: [], threads: [], procedures: [] },
    summarise: { previous: null, keep_recent_turns: 2, max_tokens: 100, deadline_ms: 5_000 },
  };
  /** What the conversation read asks memory, behind the interceptor, for a log holding `stored`. */
  async function readWith(stored: EngineEvent[]) {
    const asked: unknown[] = [];
    const interceptor = recordedStepsInterceptor(() => new RecordedSteps(stored));
    const reply = await interceptor.retrieveMemory?.(
      { request: read, signal: new AbortController().signal },
      async (input) => {
        asked.push(input.request);
        return { episodes: [], user_facts: [], open_threads: [] };
      },
    );
    return { asked, reply };
  }

  it("is given back as recorded, and memory's model is not asked again", async () => {
    const { asked, reply } = await readWith([compacted("model")]);
    const { summarise: _summarise, ...withoutSummary } = read;
    expect(asked).toEqual([withoutSummary]);
    expect(reply?.summary).toEqual({ through_turn: 2, text: "The user plans a garden.", turns: [1, 2], usage });
  });

  it("is asked for when the earlier attempt recorded none, or compacted offline", async () => {
    for (const stored of [[], [compacted("offline")]]) {
      const { asked, reply } = await readWith(stored);
      expect(asked).toEqual([read]);
      expect(reply?.summary).toBeUndefined();
    }
  });
});

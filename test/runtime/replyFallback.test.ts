/**
 * The council and voice always answer: replyFallbackInterceptor runs the
 * deterministic ones in place of those that cannot, and the turn names the
 * fallback in its warnings. Driven through the real turn machine.
 */
import { describe, expect, it } from "vitest";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { renderOffline } from "../../src/cognition/voice.ts";
import type { CouncilRequest } from "../../src/contracts/council.ts";
import type { TurnOutput, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { screeningInterceptor } from "../../src/runtime/interception/intercepted.ts";
import { defaultInterceptors } from "../../src/runtime/interception/interceptors.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { replyFallbackInterceptor } from "../../src/runtime/turnServices/replyFallback.ts";
import { composeTurnServices } from "../../src/runtime/turnServices/turnInterceptor.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import { never, runLocalTurn } from "../helpers/turns.ts";

const STAGE_MS = 2_000;
const wrap = (overrides: Partial<TurnServices>) =>
  composeTurnServices({ ...localTurnServices(), ...overrides }, [
    replyFallbackInterceptor({ stageTimeoutMs: STAGE_MS }),
  ]);
const warningsOf = (output: TurnOutput) => (output.outcome.status === "PartialSuccess" ? output.outcome.warnings : []);
const streamEvents = (records: TurnRecord[], streamId: string) =>
  records.flatMap((record) =>
    (record.kind === "STREAM_START" || record.kind === "STREAM_END") && record.payload.stream_id === streamId
      ? [record.kind]
      : [],
  );

describe("replyFallbackInterceptor", () => {
  it("answers with the deterministic council when the council's answer is unusable, and names it", async () => {
    const { records, output } = await runLocalTurn(
      "I'm stressed about my deadline tomorrow",
      wrap({
        decide: async () => {
          throw new RemoteCallError("conclave.council.decide", "agent_failed", "council: invalid_output: not JSON");
        },
      }),
      { stage_timeout_ms: STAGE_MS },
    );
    expect(output.response).not.toBe("");
    expect(records.some((record) => record.kind === "COUNCIL_DECISION_MADE")).toBe(true);
    expect(warningsOf(output)).toEqual([
      {
        stage: "council",
        code: "council_fallback",
        subject: "council",
        message: "agent_failed: council: invalid_output: not JSON; the deterministic council answered in its place",
      },
    ]);
  });

  it("ends a voice stream cut short and streams the deterministic reply afresh", async () => {
    const { records, output } = await runLocalTurn(
      "I'm stressed about my deadline tomorrow",
      // Through the response interceptors too, as the runner composes them: the reply is the new stream's alone.
      composeTurnServices(
        wrap({
          renderVoice: async (_request, _signal, onStream) => {
            onStream({ type: "start", stream_id: "default", content_type: "text/plain" });
            onStream({ type: "chunk", stream_id: "default", delta: "Here is a long" });
            throw new RemoteCallError("conclave.voice.render", "internal", "the model stream dropped");
          },
        }),
        [screeningInterceptor(defaultInterceptors())],
      ),
      { stage_timeout_ms: STAGE_MS },
    );
    expect(streamEvents(records, "default")).toEqual(["STREAM_START", "STREAM_END", "STREAM_START", "STREAM_END"]);
    const rendered = records.find((record) => record.kind === "VOICE_RENDERED");
    expect(rendered?.payload.text).not.toContain("Here is a long");
    expect(output.response).toBe(rendered?.payload.text);
    expect(output.response).not.toBe("");
    expect(warningsOf(output).map((warning) => [warning.code, warning.subject])).toEqual([["voice_fallback", "voice"]]);
  });

  it("answers in the council's place once its share of the stage is spent, within the stage", async () => {
    const { output } = await runLocalTurn("hello there", wrap({ decide: (_request, signal) => never(signal) }), {
      stage_timeout_ms: STAGE_MS,
    });
    expect(output.response).not.toBe("");
    const warnings = warningsOf(output);
    // The fallback's warning, and no "missed the stage deadline" one: the stage's time was shared.
    expect(warnings.map((warning) => [warning.stage, warning.code])).toEqual([["council", "council_fallback"]]);
    expect(warnings[0]).toMatchObject({ message: expect.stringContaining("timeout: the council did not answer") });
  });

  it("replaces an empty reply of the voice", async () => {
    const { output } = await runLocalTurn("hello there", wrap({ renderVoice: async () => ({ text: "  " }) }), {
      stage_timeout_ms: STAGE_MS,
    });
    expect(output.response).not.toBe("");
    expect(warningsOf(output)).toEqual([
      expect.objectContaining({ code: "voice_fallback", message: expect.stringContaining("invalid_output") }),
    ]);
  });

  it("leaves a call whose stage was left (a cancelled turn) unanswered", async () => {
    let asked = 0;
    const services = wrap({
      decide: (_request, signal) => {
        asked += 1;
        return never(signal);
      },
      renderVoice: (_request, signal) => never(signal),
    });
    const cancel = new AbortController();
    const decided = services.decide(councilRequest(), cancel.signal);
    const rendered = services.renderVoice(
      { session_id: "s", turn_id: 1, user_message: "hi", speech_act: act, thinking: "", feedback: [], attempt: 1 },
      cancel.signal,
      () => {},
    );
    cancel.abort(new Error("cancelled by the client"));
    await expect(Promise.allSettled([decided, rendered])).resolves.toEqual([
      { status: "rejected", reason: cancel.signal.reason },
      { status: "rejected", reason: cancel.signal.reason },
    ]);
    expect(asked).toBe(1);
    // Already cancelled: not even asked.
    await expect(services.decide(councilRequest(), cancel.signal)).rejects.toThrow("cancelled by the client");
    expect(asked).toBe(1);
  });

  it("renders with the deterministic voice exactly what the offline model would", async () => {
    const request = {
      session_id: "s",
      turn_id: 1,
      user_message: "hi",
      speech_act: act,
      thinking: "",
      feedback: [],
      attempt: 1,
    };
    const services = wrap({
      renderVoice: async () => {
        throw new RemoteCallError("conclave.voice.render", "no_responders", "no worker is serving the voice");
      },
    });
    const reply = await services.renderVoice(request, new AbortController().signal, () => {});
    expect(reply).toEqual({
      text: renderOffline(request),
      fallback: { code: "no_responders", message: "no worker is serving the voice" },
    });
  });
});

const act = { intent: "support", key_points: ["acknowledge the stress"], do_not: [] };

function councilRequest(): CouncilRequest {
  return {
    session_id: "s",
    turn_id: 1,
    context: {
      user_message: "hi",
      sensors: {
        vulnerability: 0,
        advice_requested: 0,
        relational_bid: 0,
        ai_feelings_probe: 0,
        humor_masking: 0,
        rupture: 0,
        ambiguity: 0,
        safety_risk: 0,
        prompt_injection: 0,
      },
      modulators: neutralModulators(),
      stance: neutralStance(),
      claims: [],
      episodes: [],
      consensus: 1,
      proposals: [],
    },
  };
}

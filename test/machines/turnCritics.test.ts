/**
 * The critics stage's verdict: a verdict no critic gave (every critic failed)
 * is not a pass, and the voice re-renders only a reply the council decided to
 * give.
 */
import { describe, expect, it } from "vitest";
import type { CouncilReply } from "../../src/contracts/council.ts";
import type { CriticsVerdict } from "../../src/contracts/critic.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import { runLocalTurn } from "../helpers/turns.ts";

const silent: CouncilReply = {
  decision: {
    speak: false,
    urgency: "low",
    speech_act: { intent: "listen", key_points: [], do_not: [] },
    thinking: "nothing to add",
  },
};

/** Every critic unreachable: what a critics outage looks like to the machine, with no fallback judging. */
const allUnreachable = async (): Promise<CriticsVerdict> => ({
  results: [],
  failures: ["safety", "do_not", "coherence", "length"].map((critic) => ({
    critic,
    code: "no_responders",
    message: `no worker is serving conclave.critic.${critic}`,
  })),
  usage: {},
});

/** The local voice, counting its renderings. */
function countedVoice() {
  const local = localTurnServices();
  const voice = { renderings: 0 };
  const renderVoice: TurnServices["renderVoice"] = (request, signal, onStream) => {
    voice.renderings += 1;
    return local.renderVoice(request, signal, onStream);
  };
  return { voice, renderVoice };
}

const verdictsOf = (records: Awaited<ReturnType<typeof runLocalTurn>>["records"]) =>
  records.flatMap((record) => (record.kind === "CRITICS_UPDATED" ? [record.payload] : []));

describe("turn machine: the critics' verdict", () => {
  it("does not count a verdict without results as passed, nor re-render without an objection", async () => {
    const { voice, renderVoice } = countedVoice();
    const { records, output } = await runLocalTurn("hello there", { runCritics: allUnreachable, renderVoice });
    const unreachable = expect.arrayContaining([expect.objectContaining({ critic: "safety", code: "no_responders" })]);
    expect(verdictsOf(records)).toEqual([{ results: [], passed: false, attempt: 1, failures: unreachable }]);
    expect(voice.renderings).toBe(1);
    expect(output.response.length).toBeGreaterThan(0);
    expect(output.outcome.status).toBe("PartialSuccess");
    if (output.outcome.status !== "PartialSuccess") return;
    expect(output.outcome.warnings.map((warning) => [warning.code, warning.subject])).toEqual([
      ["no_responders", "critic:safety"],
      ["no_responders", "critic:do_not"],
      ["no_responders", "critic:coherence"],
      ["no_responders", "critic:length"],
      ["unjudged", "critics"],
    ]);
  });

  it("names the fallback that judged in an unreachable critic's place", async () => {
    const { output } = await runLocalTurn("hello there", {
      runCritics: async () => ({
        results: [{ critic: "safety", passed: true, score: 1, feedback: "" }],
        failures: [
          {
            critic: "safety",
            code: "no_responders",
            message: "no worker is serving conclave.critic.safety",
            fallback: "the deterministic safety check",
          },
        ],
        usage: {},
      }),
    });
    expect(output.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [
        {
          stage: "critics",
          code: "no_responders",
          subject: "critic:safety",
          message: expect.stringContaining("the deterministic safety check judged the reply in its place"),
        },
      ],
    });
  });
});

describe("turn machine: the voice retry guard and a silent council", () => {
  it("never renders a reply the council decided not to give, even when the critics object to the empty one", async () => {
    const { voice, renderVoice } = countedVoice();
    const { records, output } = await runLocalTurn(
      "hello",
      {
        decide: async () => silent,
        renderVoice,
        runCritics: async () => ({
          results: [{ critic: "coherence", passed: false, score: 0, feedback: "Say something." }],
          failures: [],
          usage: {},
        }),
      },
      { max_voice_retries: 2 },
    );
    expect(voice.renderings).toBe(0);
    expect(records.some((record) => record.kind === "VOICE_RENDERED")).toBe(false);
    expect(records.some((record) => record.kind === "STREAM_START")).toBe(false);
    expect(verdictsOf(records).map((verdict) => verdict.attempt)).toEqual([1]);
    expect(output.response).toBe("");
  });

  it("never renders one when every critic fails on the silent council's empty reply", async () => {
    const { voice, renderVoice } = countedVoice();
    const { records, output } = await runLocalTurn("hello", {
      decide: async () => silent,
      renderVoice,
      runCritics: allUnreachable,
    });
    expect(voice.renderings).toBe(0);
    expect(records.some((record) => record.kind === "VOICE_RENDERED")).toBe(false);
    expect(output.response).toBe("");
  });

  it("does not render after a council that failed to decide", async () => {
    const { voice, renderVoice } = countedVoice();
    const { output } = await runLocalTurn("hello", {
      decide: async () => {
        throw Object.assign(new Error("no worker is serving conclave.council.decide"), { code: "no_responders" });
      },
      renderVoice,
      runCritics: async () => ({
        results: [{ critic: "coherence", passed: false, score: 0, feedback: "Say something." }],
        failures: [],
        usage: {},
      }),
    });
    expect(voice.renderings).toBe(0);
    expect(output.response).toBe("");
  });
});

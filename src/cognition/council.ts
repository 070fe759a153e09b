import {
  type CouncilDecision,
  type CouncilRequest,
  MAX_SPEECH_POINT_CHARS,
  type SafetyCouncilReply,
} from "../contracts/council.ts";

type CouncilContext = CouncilRequest["context"];

/** A proposal's text as one point of the speech act: cut to the length a point may have (an agent may propose more). */
const point = (text: string): string =>
  text.length <= MAX_SPEECH_POINT_CHARS ? text : `${text.slice(0, MAX_SPEECH_POINT_CHARS - 1)}…`;

/** The council's intent follows the strongest sensor; ties go to the first listed. */
const INTENT_BY_SENSOR: [keyof CouncilContext["sensors"], string][] = [
  ["rupture", "repair"],
  ["vulnerability", "support"],
  ["advice_requested", "advise"],
  ["relational_bid", "connect"],
  ["ai_feelings_probe", "reflect"],
  ["prompt_injection", "decline"],
  ["ambiguity", "clarify"],
];

/**
 * The offline council: speaks unless there is nothing to answer, takes the
 * agents' say/ask proposals as key points and their do_not proposals as
 * do_not; the best-supported claim is given in its thinking.
 */
export function decide(context: CouncilContext): CouncilDecision {
  const { sensors, claims, proposals, modulators, consensus } = context;
  let intent = "respond";
  let strongest = 0.3;
  for (const [sensor, candidate] of INTENT_BY_SENSOR) {
    if (sensors[sensor] > strongest) {
      strongest = sensors[sensor];
      intent = candidate;
    }
  }
  // Good news outranks the emotion sensor: "I'm so happy" is not a cry for support.
  if (claims.some((claim) => claim.id === "user_doing_well" && claim.opposition.length === 0)) intent = "celebrate";
  const says = proposals.filter((proposal) => proposal.kind === "say" || proposal.kind === "ask");
  const keyPoints = [
    ...new Set(says.map((proposal) => point(proposal.kind === "ask" ? `ask ${proposal.text}` : proposal.text))),
  ].slice(0, 4);
  const doNot = [
    ...new Set(proposals.filter((proposal) => proposal.kind === "do_not").map((proposal) => point(proposal.text))),
  ].slice(0, 6);
  const ranked = [...claims].sort((a, b) => b.confidence * b.support.length - a.confidence * a.support.length);
  const urgency = modulators.arousal > 0.6 ? "high" : modulators.arousal > 0.3 ? "normal" : "low";
  return {
    speak: context.user_message.trim().length > 0,
    urgency,
    speech_act: { intent, key_points: keyPoints, do_not: doNot },
    thinking: [
      `intent ${intent} from the strongest sensor (${strongest.toFixed(2)})`,
      `consensus ${consensus.toFixed(2)} over ${claims.length} claim(s)`,
      ranked.length > 0 ? `leading claim: ${ranked[0]!.text}` : "no claims raised",
    ].join("; "),
  };
}

export const SAFETY_REPLY =
  "I'm really glad you told me. It sounds like you might be going through something very hard, and your safety matters most right now. If you are in danger or thinking of acting on this, please contact your local emergency number or a crisis line right away. I'm here to listen: would you like to tell me what's going on?";

/** The minimal council of a safety interrupt: always speaks, always protects. */
export function safetyCouncil(): SafetyCouncilReply {
  return {
    decision: {
      speak: true,
      urgency: "high",
      speech_act: {
        intent: "protect",
        key_points: ["acknowledge", "offer support", "point to crisis help"],
        do_not: ["give methods or details that could cause harm"],
      },
      thinking: "Safety interrupt triggered",
    },
    text: SAFETY_REPLY,
  };
}

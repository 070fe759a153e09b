import { z } from "zod";
import * as contracts from "./index.ts";
import { SimulationTrace } from "./trace.ts";

/** Every wire message, by the name outside clients know it by. */
export const WIRE_SCHEMAS = {
  TurnSubmission: contracts.TurnSubmission,
  TurnAck: contracts.TurnAck,
  ErrorReply: contracts.ErrorReply,
  EngineEvent: contracts.EngineEvent,
  TurnOutcome: contracts.TurnOutcome,
  ResumeRequest: contracts.ResumeRequest,
  ResumeReply: contracts.ResumeReply,
  /** A ledger operation (`conclave.ledger.<session>`), its reply, and a ledger event as stored on the log. */
  LedgerRequest: contracts.LedgerRequest,
  LedgerReply: contracts.LedgerReply,
  LedgerEvent: contracts.LedgerEvent,
  /** Not sent as such: what `conclave trace` and `client.trace` return. */
  SimulationTrace,
  AgentRequest: contracts.AgentRequest,
  AgentReply: contracts.AgentReply,
  AgentManifest: contracts.AgentManifest,
  PlanWavesRequest: contracts.PlanWavesRequest,
  PlanWavesReply: contracts.PlanWavesReply,
  CouncilRequest: contracts.CouncilRequest,
  CouncilDecision: contracts.CouncilDecision,
  SafetyCouncilRequest: contracts.SafetyCouncilRequest,
  SafetyCouncilReply: contracts.SafetyCouncilReply,
  VoiceRequest: contracts.VoiceRequest,
  VoiceReply: contracts.VoiceReply,
  CriticRequest: contracts.CriticRequest,
  CriticReply: contracts.CriticReply,
  CouncilReply: contracts.CouncilReply,
  VoiceStreamMessage: contracts.VoiceStreamMessage,
  MemoryRetrieveRequest: contracts.MemoryRetrieveRequest,
  MemoryRetrieveReply: contracts.MemoryRetrieveReply,
  MemoryCommitRequest: contracts.MemoryCommitRequest,
  MemoryCommitReply: contracts.MemoryCommitReply,
} as const;

/** JSON Schema (draft 2020-12) of each wire message, keyed by file name. */
export function wireJsonSchemas(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(WIRE_SCHEMAS).map(([name, schema]) => [
      `${name}.schema.json`,
      { $id: `conclave/${name}`, title: name, ...z.toJSONSchema(schema, { io: "input" }) },
    ]),
  );
}

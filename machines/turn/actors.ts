import { fromCallback, fromPromise } from "xstate";
import type { TurnMemoryReply, TurnMemoryRequest } from "../../src/context/compactionRead.ts";
import type {
  CouncilReply,
  CouncilRequest,
  SafetyCouncilReply,
  SafetyCouncilRequest,
  VoiceRequest,
} from "../../src/contracts/council.ts";
import type { CriticRequest, CriticsVerdict } from "../../src/contracts/critic.ts";
import type { MemoryCommitReply, MemoryCommitRequest } from "../../src/contracts/memory.ts";
import type { PlanWavesReply, PlanWavesRequest } from "../../src/contracts/scheduler.ts";
import type {
  DeliberateInput,
  DeliberateOutput,
  RunWaveInput,
  ScreenInput,
  ScreenOutput,
} from "../../src/contracts/turnProtocol.ts";
import type { Sensors } from "../../src/contracts/workspace.ts";
import { MissingActorError } from "../errors.ts";

const unprovided = <O, I>(name: string) =>
  fromPromise<O, I>(async () => {
    throw new MissingActorError(name);
  });

/**
 * The turn's invoked actors, by name, with their input and output types. None
 * runs anything: the host provides each with `turnMachine.provide(...)`.
 */
export const turnActors = {
  senseFast: unprovided<Sensors, { text: string }>("senseFast"),
  screen: unprovided<ScreenOutput, ScreenInput>("screen"),
  safetyCouncil: unprovided<SafetyCouncilReply, SafetyCouncilRequest>("safetyCouncil"),
  /** Memory's retrieval for the turn, and the conversation when the turn will compact (src/context/compactionRead.ts). */
  retrieveMemory: unprovided<TurnMemoryReply, TurnMemoryRequest>("retrieveMemory"),
  planWaves: unprovided<PlanWavesReply, PlanWavesRequest>("planWaves"),
  runWave: fromCallback<{ type: "noop" }, RunWaveInput>(() => {
    throw new MissingActorError("runWave");
  }),
  deliberate: unprovided<DeliberateOutput, DeliberateInput>("deliberate"),
  decide: unprovided<CouncilReply, CouncilRequest>("decide"),
  renderVoice: fromCallback<{ type: "noop" }, VoiceRequest>(() => {
    throw new MissingActorError("renderVoice");
  }),
  runCritics: unprovided<CriticsVerdict, CriticRequest>("runCritics"),
  commitMemory: unprovided<MemoryCommitReply, MemoryCommitRequest>("commitMemory"),
};

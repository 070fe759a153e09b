/**
 * A runner's turn services are one declared list of interceptors: each one,
 * composed alone over a recording base, passes every call on with its
 * callbacks (an agent's stream parts and approvals, the voice's stream
 * parts still reach the caller), or answers it itself where it is meant to;
 * and the list composes in its documented order, first outermost.
 */
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentDirectory } from "../../src/agents/directory.ts";
import { offlineBackend } from "../../src/cognition/backend.ts";
import { DEFAULT_ARENA_POLICY } from "../../src/context/arena.ts";
import type { AgentStreamEvent } from "../../src/contracts/agent.ts";
import type { LedgerStore } from "../../src/ledgers/ledgerStore.ts";
import { screeningInterceptor } from "../../src/runtime/interception/intercepted.ts";
import { defaultInterceptors } from "../../src/runtime/interception/interceptors.ts";
import { PipelineTools } from "../../src/runtime/toolCalls/pipelineTools.ts";
import type { ToolGate } from "../../src/runtime/toolCalls/toolGate.ts";
import { AgentsPipelineTurns } from "../../src/runtime/turnServices/agentsPipeline.ts";
import { hostedCognitionInterceptor } from "../../src/runtime/turnServices/hostedCognition.ts";
import { knowledgeRetrievalInterceptor, TurnTenants } from "../../src/runtime/turnServices/knowledgeRetrieval.ts";
import { ledgerDigestInterceptor } from "../../src/runtime/turnServices/ledgerContext.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { recordedStepsInterceptor } from "../../src/runtime/turnServices/recordedSteps.ts";
import { replyFallbackInterceptor } from "../../src/runtime/turnServices/replyFallback.ts";
import {
  runnerTurnServices,
  type TurnInterceptorName,
  turnInterceptorOrder,
} from "../../src/runtime/turnServices/runnerTurnServices.ts";
import { skillRecordsInterceptor } from "../../src/runtime/turnServices/skillRecording.ts";
import { stepTimingsInterceptor } from "../../src/runtime/turnServices/stepTimings.ts";
import { tracingInterceptor } from "../../src/runtime/turnServices/tracedServices.ts";
import {
  composeTurnServices,
  TURN_CALLS,
  type TurnCall,
  type TurnInterceptor,
} from "../../src/runtime/turnServices/turnInterceptor.ts";
import type { ApprovalAsked, TurnServices } from "../../src/runtime/turnServices/turnServices.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { runLocalTurn } from "../helpers/turns.ts";

type Args = { [C in TurnCall]: Parameters<TurnServices[C]> };

/** The arguments of every call a real turn makes (a safety turn for the safety council), captured once. */
async function capturedArgs(): Promise<Args> {
  const local = localTurnServices();
  const seen: Partial<Args> = {};
  const capturing = Object.fromEntries(
    TURN_CALLS.map((call) => [
      call,
      (...args: unknown[]) => {
        seen[call] ??= args as never;
        return (local[call] as (...given: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as TurnServices;
  await runLocalTurn("I'm stressed about my deadline and my manager keeps adding work", capturing);
  await runLocalTurn("I want to hurt myself, I want to die", capturing);
  for (const call of TURN_CALLS) expect(seen[call], `a turn calls ${call}`).toBeDefined();
  return seen as Args;
}

const asked: ApprovalAsked = {
  approval: { call_id: "c1", tool: "send_mail", args: {}, reason: "writes" },
  prompt: "send it?",
  required_role: "operator",
};

/** Services that note every call reaching them, and use the callbacks they are given as a worker would. */
function recordingBase(reached: Set<TurnCall>): TurnServices {
  const local = localTurnServices();
  const noting = Object.fromEntries(
    TURN_CALLS.map((call) => [
      call,
      (...args: unknown[]) => {
        reached.add(call);
        return (local[call] as (...given: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as TurnServices;
  return {
    ...noting,
    callAgent: async (request, signal, { attempts, onStream, onApproval } = {}) => {
      reached.add("callAgent");
      const part = { session_id: request.session_id, turn_id: request.turn_id, agent_id: request.agent_id };
      onStream?.({ ...part, stream: "notes", type: "start", content_type: "text/plain" });
      onStream?.({ ...part, stream: "notes", type: "chunk", delta: "a note" });
      onStream?.({ ...part, stream: "notes", type: "end" });
      onApproval?.(asked);
      return local.callAgent(request, signal, { attempts });
    },
  };
}

/** Each layer of the list as the runner makes it, with stand-ins for its stores; what it answers itself. */
const layers: { [N in TurnInterceptorName]: { make: (below: TurnServices) => TurnInterceptor; answers?: TurnCall[] } } =
  {
    recordedSteps: { make: () => recordedStepsInterceptor(() => undefined) },
    pipelineTools: {
      make: (below) =>
        new PipelineTools({
          gate: {} as ToolGate,
          // An agent without tools or delegates: its call goes on as asked.
          directory: Promise.resolve({ manifest: () => undefined } as unknown as AgentDirectory),
          policy: { rules: [] } as never,
        }).interceptor(below, { record: () => {}, flushed: async () => {}, stored: () => [] }),
    },
    skillRecords: { make: () => skillRecordsInterceptor(() => {}) },
    stepTimings: { make: () => stepTimingsInterceptor("debug", () => {}) as TurnInterceptor },
    tracing: { make: () => tracingInterceptor() as TurnInterceptor },
    // An agent that names no knowledge collection: its call goes on as asked, and nothing is searched.
    knowledge: {
      make: () =>
        knowledgeRetrievalInterceptor({
          search: async () => {
            throw new Error("no search for an agent without collections");
          },
          directory: Promise.resolve({ manifest: () => undefined } as unknown as AgentDirectory),
          tenants: new TurnTenants(),
          arena: DEFAULT_ARENA_POLICY,
          log: silentLogger,
        }),
    },
    // The request chain is the screen: nothing below it screens.
    screening: { make: () => screeningInterceptor(defaultInterceptors()), answers: ["screen"] },
    ledgerDigest: {
      make: () =>
        ledgerDigestInterceptor(
          { forTurn: async () => ({ digest: null, compaction: null, skills: [], supplements: [] }) } as Pick<
            LedgerStore,
            "forTurn"
          >,
          silentLogger,
        ),
    },
    // A turn it has not seen start as an `agents` turn passes straight on.
    agentsPipeline: { make: () => new AgentsPipelineTurns().interceptor() },
    replyFallback: { make: () => replyFallbackInterceptor({ stageTimeoutMs: 30_000 }) },
    hostedCognition: {
      make: () =>
        hostedCognitionInterceptor({
          backend: offlineBackend,
          cooldowns: { load: async () => ({}), save: async () => {} },
          directory: Promise.resolve({ roster: () => [] }),
        }),
      // The runner answers these itself: they never reach the workers.
      answers: ["planWaves", "decide", "safetyCouncil", "renderVoice", "runCritics"],
    },
  };

/**
 * Calls every service through `interceptor` over a recording base: each call
 * reaches the base unless the layer `answers` it, and the callbacks given
 * reach the caller: the agent's stream parts and its approval, the voice's
 * stream parts.
 */
async function passesEveryCallOn(args: Args, make: (below: TurnServices) => TurnInterceptor, answers: TurnCall[] = []) {
  const reached = new Set<TurnCall>();
  const base = recordingBase(reached);
  const services = composeTurnServices(base, [make(base)]);
  const signal = new AbortController().signal;
  const agentParts: AgentStreamEvent[] = [];
  const approvals: ApprovalAsked[] = [];
  const voiceParts: string[] = [];
  await services.senseFast(...args.senseFast);
  await services.screen(...args.screen);
  await services.retrieveMemory(args.retrieveMemory[0], signal);
  await services.planWaves(args.planWaves[0], signal);
  await services.callAgent(args.callAgent[0], signal, {
    onStream: (part) => agentParts.push(part),
    onApproval: (given) => approvals.push(given),
  });
  await services.deliberate(args.deliberate[0], signal);
  await services.decide(args.decide[0], signal);
  await services.safetyCouncil(args.safetyCouncil[0], signal);
  await services.renderVoice(args.renderVoice[0], signal, (part) => voiceParts.push(part.type));
  await services.runCritics(args.runCritics[0], signal);
  await services.commitMemory(args.commitMemory[0], signal);
  expect([...reached].sort()).toEqual(TURN_CALLS.filter((call) => !answers.includes(call)).sort());
  expect(agentParts.map((part) => part.type)).toEqual(expect.arrayContaining(["start", "end"]));
  expect(approvals).toEqual([asked]);
  expect(voiceParts).toEqual(expect.arrayContaining(["start", "chunk", "end"]));
}

let args: Args;
const provider = new BasicTracerProvider();

beforeAll(async () => {
  // A tracer provider registered: the tracing layer is in use (without one it is null, as on an untraced runner).
  trace.setGlobalTracerProvider(provider);
  args = await capturedArgs();
});

afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});

describe("a runner's turn interceptors", () => {
  it("are declared in their documented order, first outermost", () => {
    expect(turnInterceptorOrder).toEqual([
      "recordedSteps",
      "pipelineTools",
      "skillRecords",
      "stepTimings",
      "tracing",
      "knowledge",
      "screening",
      "ledgerDigest",
      "agentsPipeline",
      "replyFallback",
      "hostedCognition",
    ]);
  });

  it.each(turnInterceptorOrder)("%s passes every call on, with its callbacks", async (name) => {
    expect(tracingInterceptor()).not.toBeNull();
    await passesEveryCallOn(args, layers[name].make, layers[name].answers);
  });

  it("a layer that drops a callback is caught", async () => {
    const dropsApproval: TurnInterceptor = { callAgent: ({ onApproval: _dropped, ...input }, next) => next(input) };
    await expect(passesEveryCallOn(args, () => dropsApproval)).rejects.toThrow();
    const dropsVoice: TurnInterceptor = { renderVoice: (input, next) => next({ ...input, onStream: () => {} }) };
    await expect(passesEveryCallOn(args, () => dropsVoice)).rejects.toThrow();
  });

  it("composes the list in its order: pipeline turns meet every layer, recipe turns the shared ones", async () => {
    const met: TurnInterceptorName[] = [];
    const noting = (name: TurnInterceptorName): TurnInterceptor => ({
      decide: (input, next) => {
        met.push(name);
        return next(input);
      },
    });
    const byName = (names: readonly TurnInterceptorName[]) =>
      Object.fromEntries(names.map((name) => [name, noting(name)])) as never;
    const services = runnerTurnServices(localTurnServices(), {
      shared: byName(turnInterceptorOrder.slice(2)),
      pipeline: () => byName(turnInterceptorOrder.slice(0, 2)),
    });
    const signal = new AbortController().signal;
    await services.pipeline.decide(args.decide[0], signal);
    expect(met).toEqual([...turnInterceptorOrder]);
    met.length = 0;
    await services.recipe.decide(args.decide[0], signal);
    expect(met).toEqual(turnInterceptorOrder.slice(2));
  });
});

import { assign } from "xstate";
import { applyAgentOutput } from "../../src/cognition/workspace.ts";
import { observeUsage } from "../../src/context/arena.ts";
import { SKILLS_ROUTING_ACTOR } from "../../src/contracts/usage.ts";
import { agentContext, mergeUsage, zeroSensors } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The agents stage: the scheduler plans waves, and each wave of agents answers in turn. */

export const agents = turnSetup.createStateConfig({
  entry: [{ type: "enterStage", params: { stage: "agents" } }, "planContext"],
  initial: "planning",
  states: {
    planning: {
      invoke: {
        src: "planWaves",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.turn_id,
          sensors: context.sensors ?? zeroSensors(),
          modulators: context.workspace.modulators,
          token_budget: context.policy.token_budget,
        }),
        onDone: {
          target: "planned",
          actions: [
            assign({
              waves: ({ event }) => event.output.waves.filter((wave) => wave.length > 0),
              wave: 0,
            }),
            { type: "record", params: ({ event }) => ({ kind: "SCHEDULE_PLANNED", payload: event.output }) },
          ],
        },
        onError: {
          target: "done",
          actions: failed("agents", "scheduler"),
        },
      },
    },
    planned: {
      always: [{ guard: "hasWaves", target: "wave" }, { target: "done" }],
    },
    wave: {
      // An agent's stream still open when its wave ends (deadline, interrupt) gets its STREAM_END.
      exit: "closeOpenStreams",
      entry: [
        assign(({ context }) => ({
          wave_pending: context.waves[context.wave] ?? [],
          wave_open: true,
          wave_failures: 0,
          wave_stance: context.workspace.stance,
        })),
        {
          type: "record",
          params: ({ context }) => ({
            kind: "WAVE_STARTED",
            payload: {
              wave: context.wave,
              agent_count: context.waves[context.wave]?.length ?? 0,
              agents: context.waves[context.wave] ?? [],
            },
          }),
        },
      ],
      invoke: {
        src: "runWave",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.turn_id,
          wave: context.wave,
          agents: context.waves[context.wave] ?? [],
          timeout_ms: context.policy.agent_timeout_ms,
          attempts: context.policy.agent_attempts,
          context: agentContext(context),
          ...(context.active_skills.length > 0 ? { active_skills: context.active_skills } : {}),
        }),
        onError: {
          target: "done",
          actions: [failed("agents"), "closeWave"],
        },
      },
      on: {
        "agent.replied": {
          actions: [
            assign(({ context, event }) => ({
              workspace: applyAgentOutput(context.workspace, event.reply.agent_id, event.reply.contribution),
              wave_pending: context.wave_pending.filter((id) => id !== event.reply.agent_id),
              usage: mergeUsage(context.usage, {
                ...(event.reply.usage ? { [`agent:${event.reply.agent_id}`]: event.reply.usage } : {}),
                // The worker's skill routing embedded the message for this call: a model call of the turn.
                ...(event.reply.routing_usage ? { [SKILLS_ROUTING_ACTOR]: event.reply.routing_usage } : {}),
              }),
              context_arena: observeUsage(context.context_arena, event.reply.usage),
            })),
            {
              type: "record",
              params: ({ context, event }) => ({
                kind: "AGENT_COMPLETED",
                payload: {
                  wave: context.wave,
                  agent_id: event.reply.agent_id,
                  output: event.reply.output,
                  contribution: event.reply.contribution,
                  elapsed_ms: event.reply.elapsed_ms,
                  worker: event.reply.worker,
                  ...(event.reply.usage ? { usage: event.reply.usage } : {}),
                  ...(event.reply.skills ? { skills: event.reply.skills } : {}),
                  ...(event.reply.routing_usage ? { routing_usage: event.reply.routing_usage } : {}),
                  ...(event.reply.identity ? { identity: event.reply.identity } : {}),
                },
              }),
            },
          ],
        },
        "agent.failed": {
          actions: [
            assign(({ context, event }) => ({
              wave_failures: context.wave_failures + 1,
              wave_pending: context.wave_pending.filter((id) => id !== event.agent_id),
            })),
            {
              type: "record",
              params: ({ context, event }) => ({
                kind: "AGENT_FAILED",
                payload: {
                  wave: context.wave,
                  agent_id: event.agent_id,
                  code: event.code,
                  message: event.message,
                },
              }),
            },
            {
              type: "warn",
              params: ({ event }) => ({
                stage: "agents",
                code: event.code,
                message: event.message,
                subject: event.agent_id,
              }),
            },
          ],
        },
        // A tool call waits for a person: the turn suspends, durably, and runs again from its log once answered.
        "agent.approval_required": {
          target: "#turn.suspended",
          actions: [
            assign({
              suspended: ({ event }) => ({
                node: `agent:${event.agent_id}`,
                prompt: event.prompt,
                required_role: event.required_role,
                approval: event.approval,
              }),
            }),
            {
              type: "record",
              params: ({ event }) => ({
                kind: "HUMAN_INPUT_REQUESTED",
                payload: {
                  node: `agent:${event.agent_id}`,
                  prompt: event.prompt,
                  required_role: event.required_role,
                  approval: event.approval,
                },
              }),
            },
          ],
        },
        "agent.stream.start": { actions: "openStream" },
        "agent.stream.chunk": { actions: "streamChunk" },
        "agent.stream.end": { actions: "closeStream" },
        "agent.stream.intercepted": { actions: "recordResponseInterception" },
        "wave.done": [
          {
            guard: "hasMoreWaves",
            target: "wave",
            reenter: true,
            actions: ["closeWave", assign({ wave: ({ context }) => context.wave + 1 })],
          },
          { target: "done", actions: "closeWave" },
        ],
      },
      after: {
        waveTimeout: [
          {
            guard: "hasMoreWaves",
            target: "wave",
            reenter: true,
            actions: ["waveOverran", "closeWave", assign({ wave: ({ context }) => context.wave + 1 })],
          },
          { target: "done", actions: ["waveOverran", "closeWave"] },
        ],
      },
    },
    done: { type: "final" },
  },
  onDone: "deliberation",
  after: {
    stageTimeout: {
      target: "deliberation",
      actions: [
        {
          type: "abandonWave",
          params: { code: "timeout" as const, reason: "the agents stage missed its deadline" },
        },
        overran("agents", "agent waves"),
      ],
    },
  },
});

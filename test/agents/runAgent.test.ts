import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AGENTS } from "../../agents/index.ts";
import { AgentDefinitionError, defineAgent, isAgentDefinition, quietOutput } from "../../src/agents/defineAgent.ts";
import { InvalidAgentOutputError, runAgent } from "../../src/agents/runAgent.ts";
import { runFastSensors } from "../../src/cognition/sensors.ts";
import { type AgentContext, type AgentStreamPart, Contribution } from "../../src/contracts/agent.ts";
import { type Claim, neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { isConclaveError } from "../../src/errors.ts";
import { agentRequest } from "../helpers/agents.ts";
import { modelAgainst } from "../llm/fixtures.ts";

const context = (message: string, claims: Claim[] = []): AgentContext => ({
  user_message: message,
  sensors: runFastSensors(message),
  modulators: neutralModulators(),
  stance: neutralStance(),
  claims,
  episodes: [],
});
const signal = () => new AbortController().signal;

const Forecast = z.object({
  rain: z.boolean(),
  confidence: z.number().min(0).max(1).default(0.5),
  proposals: z.array(z.object({ kind: z.literal("say"), text: z.string() })).default([]),
});

describe("defineAgent", () => {
  it("fills the scheduling defaults and announces the output's JSON Schema", () => {
    const agent = defineAgent({
      name: "acme.forecaster",
      description: "d",
      output: Forecast,
      run: () => ({ rain: false }),
    });
    expect(agent.manifest).toMatchObject({
      id: "acme.forecaster",
      agency: "acme",
      priority: "SCHEDULED",
      triggers: [],
      cooldown_s: 0,
      token_budget: 600,
    });
    expect(agent.manifest.output_schema).toMatchObject({ type: "object", required: expect.arrayContaining(["rain"]) });
    expect(isAgentDefinition(agent)).toBe(true);
    expect(isAgentDefinition({ ...agent })).toBe(false);
    const builtin = AGENTS.get("emotion.stress")!;
    expect(builtin.manifest.output_schema).toBeUndefined();
  });

  it("refuses a definition that cannot run, naming what is wrong", () => {
    const base = { name: "acme.x", description: "d", output: Forecast, run: () => ({ rain: false }) };
    expect(() => defineAgent({ ...base, output: {} } as never)).toThrow(/output must be a zod schema/);
    expect(() => defineAgent({ ...base, run: undefined as never })).toThrow(/run must be a function/);
    expect(() => defineAgent({ ...base, output: z.custom<string>(() => true), run: () => "x" })).toThrow(
      AgentDefinitionError,
    );
    expect(() => defineAgent({ ...base, tokenBudget: 1.5 })).toThrow(/token_budget/);
  });
});

describe("runAgent", () => {
  const forecaster = defineAgent({
    name: "acme.forecaster",
    description: "d",
    output: Forecast,
    run: ({ input }) => {
      const rain = /rain/.test(input.user_message);
      return { rain, proposals: rain ? [{ kind: "say" as const, text: "Umbrella." }] : [] };
    },
  });

  it("answers with the output (defaults filled) and the contribution its contract fields make", async () => {
    const answer = await runAgent(forecaster, agentRequest("acme.forecaster", context("rain today?")), {
      signal: signal(),
    });
    expect(answer.output).toEqual({ rain: true, confidence: 0.5, proposals: [{ kind: "say", text: "Umbrella." }] });
    expect(answer.contribution).toEqual({ ...quietOutput(), proposals: [{ kind: "say", text: "Umbrella." }] });
  });

  it("names the path of an answer its schema rejects, and of a contribution the contract rejects", async () => {
    const wrong = defineAgent({
      name: "acme.wrong",
      description: "d",
      output: Forecast,
      run: () => ({ rain: "yes" }) as never,
    });
    const error = await runAgent(wrong, agentRequest("acme.wrong", context("hi")), { signal: signal() }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(InvalidAgentOutputError);
    expect((error as InvalidAgentOutputError).code).toBe("invalid_agent_output");
    expect((error as Error).message).toMatch(/rain: /);
    const badContract = defineAgent({
      name: "acme.contract",
      description: "d",
      output: z.object({ claims: z.array(z.string()) }),
      run: () => ({ claims: ["not a claim object"] }),
    });
    await expect(
      runAgent(badContract, agentRequest("acme.contract", context("hi")), { signal: signal() }),
    ).rejects.toThrow(/council contract rejects: claims\.0/);
  });

  it("revises by majority as its own id unless it has a revise of its own", async () => {
    const claims: Claim[] = [
      { id: "mine", text: "t", source: "acme.forecaster", confidence: 0.5, support: [], opposition: ["a.b", "a.c"] },
    ];
    const revised = await runAgent(forecaster, agentRequest("acme.forecaster", context("hi", claims), "revise", 1), {
      signal: signal(),
    });
    expect(revised.output).toBeUndefined();
    expect(revised.contribution.withdraws).toEqual(["mine"]);
    const stubborn = defineAgent({
      ...forecaster.manifest,
      name: "acme.stubborn",
      description: "d",
      output: Forecast,
      run: () => ({ rain: false }),
      revise: () => ({ opposes: ["x"] }),
    });
    const own = await runAgent(stubborn, agentRequest("acme.stubborn", context("hi", claims), "revise", 1), {
      signal: signal(),
    });
    expect(own.contribution).toEqual({ ...quietOutput(), opposes: ["x"] });
  });

  it("streams named parts in order and closes them when run throws", async () => {
    const parts: AgentStreamPart[] = [];
    const streaming = defineAgent({
      name: "acme.streamer",
      description: "d",
      output: Forecast,
      run: ({ stream }) => {
        stream("notes", "a");
        stream("table", "| x |", { contentType: "text/markdown" });
        stream("notes", "b");
        throw new Error("gave up");
      },
    });
    await expect(
      runAgent(streaming, agentRequest("acme.streamer", context("hi")), {
        signal: signal(),
        onStream: (p) => parts.push(p),
      }),
    ).rejects.toThrow("gave up");
    expect(parts.map((p) => [p.stream, p.type, p.delta ?? p.content_type ?? ""])).toEqual([
      ["notes", "start", "text/plain"],
      ["notes", "chunk", "a"],
      ["table", "start", "text/markdown"],
      ["table", "chunk", "| x |"],
      ["notes", "chunk", "b"],
      ["notes", "end", ""],
      ["table", "end", ""],
    ]);
    expect(parts.every((p) => p.agent_id === "acme.streamer" && p.session_id === "s1" && p.turn_id === 1)).toBe(true);
    const badName = defineAgent({
      name: "acme.bad",
      description: "d",
      output: Forecast,
      run: ({ stream }) => {
        stream("Bad Name", "x");
        return { rain: false };
      },
    });
    await expect(runAgent(badName, agentRequest("acme.bad", context("hi")), { signal: signal() })).rejects.toThrow(
      /stream name/,
    );
  });

  it("gives run the model through the real openai client, bounded by the agent's budget, its usage counted", async () => {
    const { model, server } = await modelAgainst([
      { content: JSON.stringify({ rain: true, confidence: 0.9 }), usage: { prompt_tokens: 12, completion_tokens: 7 } },
      { content: "Take an umbrella.", usage: { prompt_tokens: 3, completion_tokens: 4 } },
    ]);
    const deltas: string[] = [];
    const asking = defineAgent({
      name: "acme.asking",
      description: "d",
      tokenBudget: 123,
      output: Forecast,
      run: async (ctx) => {
        const value = await ctx.model!.structured({ system: "s", user: ctx.input.user_message, schema: Forecast });
        await ctx.model!.text({ system: "s", user: "say it", onDelta: (delta) => deltas.push(delta) });
        return value;
      },
    });
    const answer = await runAgent(asking, agentRequest("acme.asking", context("rain?")), { model, signal: signal() });
    expect(answer.output).toEqual({ rain: true, confidence: 0.9, proposals: [] });
    expect(answer.usage).toEqual({ prompt_tokens: 15, completion_tokens: 11, model: model.model });
    expect(deltas.join("")).toBe("Take an umbrella.");
    expect(server.requests[0]?.response_format?.json_schema?.name).toBe("agent_output");
    expect(server.requests[0]?.max_tokens).toBe(123);
    let offline: unknown = "unset";
    const probe = defineAgent({
      name: "acme.probe",
      description: "d",
      output: Forecast,
      run: (ctx) => {
        offline = ctx.model;
        return { rain: false };
      },
    });
    await runAgent(probe, agentRequest("acme.probe", context("x")), { signal: signal() });
    expect(offline).toBeUndefined();
  });

  it("tells a built-in agent's model what memory and the ledgers hold, and only what there is", async () => {
    const empty = { claims: [], proposals: [], supports: [], opposes: [] };
    const { model, server } = await modelAgainst([
      { content: JSON.stringify(empty) },
      { content: JSON.stringify(empty) },
    ]);
    const stress = AGENTS.get("emotion.stress")!;
    const remembered: AgentContext = {
      ...context("I'm so stressed about the trip"),
      user_facts: ["has a sister called Ana"],
      open_threads: ["reminder: call the bank tomorrow"],
      procedures: ["Keep answers short"],
      ledgers: {
        facts: ["Ana prefers window seats"],
        task: { goal: "Plan the trip", open_items: ["[todo] Book the flights"], open_blockers: [] },
        counts: { facts_active: 1, facts_resolved: 0, items_open: 1, items_done: 0, blockers_open: 0 },
        text: "Known facts: Ana prefers window seats\nTask: Plan the trip",
      },
    };
    await runAgent(stress, agentRequest("emotion.stress", remembered), { model, signal: signal() });
    await runAgent(stress, agentRequest("emotion.stress", context("I'm so stressed")), { model, signal: signal() });
    // The context arena's zone sections (docs/context.md), each only when it has something.
    const [told, plain] = server.requests.map((body) => String(body.messages[1]?.content));
    for (const line of [
      "- has a sister called Ana",
      "- Open thread: reminder: call the bank tomorrow",
      "- Keep answers short",
      "- Ana prefers window seats",
      "- Goal: Plan the trip",
      "- Open: [todo] Book the flights",
    ])
      expect(told).toContain(line);
    for (const heading of ["## Recall", "## Truth", "## Working memory"]) expect(plain).not.toContain(heading);
    expect(plain).toContain("- The user says: I'm so stressed");
  });

  it("answers offline for the built-in agents, through the same path", async () => {
    const answer = await runAgent(
      AGENTS.get("emotion.stress")!,
      agentRequest("emotion.stress", context("I'm so stressed and overwhelmed")),
      {
        signal: signal(),
      },
    );
    expect(answer.output).toBeUndefined(); // its output is its contribution, sent once
    expect(Contribution.parse(answer.contribution)).toEqual(answer.contribution);
    expect(answer.contribution.claims.map((claim) => claim.id)).toEqual(["user_stressed"]);
  });
});

describe("an agent's ctx.ledgers without a runner", () => {
  it("rejects every call with `unavailable`, naming why", async () => {
    const agent = defineAgent({
      name: "acme.notes",
      description: "Reads the truth ledger.",
      output: z.object({ code: z.string() }),
      run: async ({ ledgers }) => {
        try {
          await ledgers.truth.getState();
          return { code: "none" };
        } catch (error) {
          return { code: isConclaveError(error) ? `${error.code}: ${error.message}` : "not a ConclaveError" };
        }
      },
    });
    const answer = await runAgent(agent, agentRequest("acme.notes", context("what do you know?")), {
      signal: signal(),
    });
    expect(answer.output).toEqual({
      code: "unavailable: the ledgers are kept by runners: this agent runs without one (in-process)",
    });
  });
});

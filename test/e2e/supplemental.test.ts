/**
 * Supplemental injection (issue 38, seed 003's planSupplementalInjection / commitSupplementalInjection),
 * in LLM mode (the suite's OpenAI-compatible server, through the real `openai` client), on a real
 * nats-server with an in-process runner and workers: a plan says how much of a text the next turn
 * would take and writes nothing; a commit (the client's, or `conclave context supplement commit`) is
 * recorded once per scope; the next turn's agents are shown it in their prompt's supplemental zone and
 * its CONTEXT_PLANNED cites it; the turn after does not see it again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { ZONE_TITLES } from "../../src/context/zones.ts";
import type { EngineEvent, EventPayload } from "../../src/contracts/events.ts";
import { partitionOf } from "../../src/contracts/partitions.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { runConclave } from "../helpers/cli.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();

let model: OpenAIServer;
let agents: WorkerHandle;
let core: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel());
  const llm = { baseURL: model.url, apiKey: "k", model: "scripted", timeoutMs: 10_000, maxRetries: 0 };
  agents = await startWorker({ nc: await nats.connect("worker"), agents: builtinAgents("reasoning.*"), llm });
  core = await startWorker({ nc: await nats.connect("worker"), agents: [], services: [...CORE_SERVICES], llm: false });
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await client?.close();
  await runner?.stop();
  await Promise.allSettled([agents?.stop(), core?.stop()]);
  await model?.stop();
});

/** A turn's events, and the user prompts the model was sent for the agents in it. */
async function turn(session: string, text: string): Promise<{ events: EngineEvent[]; prompts: string[] }> {
  const before = model.requests.length;
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  const prompts = model.requests
    .slice(before)
    .filter((body) => /one agent in a council/.test(String(body.messages[0]?.content ?? "")))
    .map((body) => String(body.messages.find((message) => message.role === "user")?.content ?? ""));
  return { events, prompts };
}

const plannedOf = (events: EngineEvent[]): EventPayload<"CONTEXT_PLANNED"> => {
  const planned = events.find((event) => event.kind === "CONTEXT_PLANNED");
  if (planned?.kind !== "CONTEXT_PLANNED") throw new Error("no CONTEXT_PLANNED");
  return planned.payload;
};

const NOTE = "The user's order #812 shipped today by courier.";

describe("supplemental injection", () => {
  it("plans a text too long for the zone as truncated, and writes nothing", async () => {
    const session = "supplement-plan";
    const long = Array.from(
      { length: 250 },
      (_, index) => `Line ${index}: the warehouse restocked aisle ${index}.`,
    ).join(" ");
    const plan = await client.context.planSupplemental(session, long, { scope: "stock" });
    expect(plan.outcome).toBe("truncated");
    expect(plan.scope).toBe("stock");
    expect(plan.tokens_asked).toBeGreaterThan(plan.room_tokens);
    expect(plan.tokens_accepted).toBeLessThanOrEqual(plan.room_tokens);
    // The default budget's zone: 0.1 of 16,000 tokens, less its heading.
    expect(plan.room_tokens).toBeGreaterThan(1_550);
    expect(plan.room_tokens).toBeLessThan(1_600);
    expect(plan.reason).toContain("the supplemental zone has room for");
    expect(plan.text.endsWith(" […truncated]")).toBe(true);
    // The rest of the context nearly fills the budget: little room is left.
    const squeezed = await client.context.planSupplemental(session, long, { usageTokens: 15_000 });
    expect(squeezed.room_tokens).toBeLessThan(plan.room_tokens);
    expect(squeezed.reason).toContain("the budget leaves");
    expect((await client.ledgers.state(session)).supplements).toBeUndefined();
  });

  it("a committed supplement reaches the next turn's agents once, cited by its CONTEXT_PLANNED", async () => {
    const session = "supplement-turns";
    await turn(session, "Where is my parcel?");

    const committed = await runConclave(nats.url, [
      "context",
      "supplement",
      "commit",
      session,
      NOTE,
      "--scope",
      "order-812",
    ]);
    expect(committed.stderr).toBe("");
    expect(committed.code).toBe(0);
    expect(committed.stdout.trim()).toMatch(
      new RegExp(
        `^supplement committed for session ${session} \\(scope order-812\\): its next turn takes \\d+ tokens$`,
      ),
    );
    // The same scope again (a retry): nothing recorded again.
    const retried = await client.context.commitSupplemental(session, "Something else entirely.", {
      scope: "order-812",
    });
    expect(retried).toMatchObject({ duplicate: true, scope: "order-812", text: NOTE });
    const recorded = (await client.ledgers.state(session)).supplements?.recorded ?? [];
    expect(recorded.map((supplement) => supplement.text)).toEqual([NOTE]);
    // A plan now leaves the pending supplement its line of the zone.
    const fresh = await client.context.planSupplemental("supplement-none", "Prefer metric units.");
    const behind = await client.context.planSupplemental(session, "Prefer metric units.");
    expect(fresh.pending_tokens).toBe(0);
    expect(behind.pending_tokens).toBeGreaterThan(recorded[0]?.tokens ?? 0);
    expect(behind.room_tokens).toBe(fresh.room_tokens - (behind.pending_tokens ?? 0));

    const next = await turn(session, "And when will it arrive?");
    expect(next.prompts.length).toBeGreaterThan(0);
    for (const prompt of next.prompts) expect(prompt).toContain(`## ${ZONE_TITLES.supplemental}\n- ${NOTE}`);
    const planned = plannedOf(next.events);
    expect(planned.zones.supplemental.kept).toEqual([`supplement:${recorded[0]?.seq}`]);
    expect(planned.supplemental).toEqual([
      {
        seq: recorded[0]?.seq,
        scope: "order-812",
        tokens_committed: recorded[0]?.tokens,
        tokens_accepted: expect.any(Number),
        outcome: "kept",
      },
    ]);

    // Consumed: the turn after neither shows nor cites it.
    const after = await turn(session, "Thanks!");
    expect(after.prompts.length).toBeGreaterThan(0);
    for (const prompt of after.prompts) expect(prompt).not.toContain(NOTE);
    expect(plannedOf(after.events).supplemental).toBeUndefined();
    // A new commit (another scope) is injected again.
    await client.context.commitSupplemental(session, "The courier is DPD.", { scope: "courier", tokens: 50 });
    const again = await turn(session, "Which courier?");
    for (const prompt of again.prompts) expect(prompt).toContain("- The courier is DPD.");
    expect(plannedOf(again.events).supplemental?.map((citation) => citation.scope)).toEqual(["courier"]);

    // A fork after those turns has consumed them too (its copies of the events have sequences of their own):
    // its next turn shows none; one committed to the fork is shown once.
    const streams = await eventStreamCount(await nats.connect("runner"));
    const fork = ["a", "b", "c", "d", "e", "f", "g", "h"]
      .map((suffix) => `supplement-fork-${suffix}`)
      .find((id) => partitionOf(id, streams) === partitionOf(session, streams));
    await client.fork({ session, at: { turn: 4 }, as: fork! });
    const forked = await turn(fork!, "Is it here yet?");
    expect(plannedOf(forked.events).supplemental).toBeUndefined();
    for (const prompt of forked.prompts) expect(prompt).not.toContain("DPD");
    await client.context.commitSupplemental(fork!, "The parcel is at the depot.");
    const forkNext = await turn(fork!, "Where is it now?");
    for (const prompt of forkNext.prompts) expect(prompt).toContain("- The parcel is at the depot.");
    expect(plannedOf(forkNext.events).supplemental).toHaveLength(1);
  }, 120_000);

  it("refuses bad input with one line", async () => {
    await expect(client.context.commitSupplemental("supplement-bad", "   ")).rejects.toMatchObject({
      code: "invalid_request",
      message: "bad supplement commit: text: the text is empty",
    });
    await expect(client.context.planSupplemental("supplement bad", "hello")).rejects.toMatchObject({
      code: "invalid_request",
    });
    // More tokens than the zone has room for: refused by the runner, nothing recorded.
    await expect(
      client.context.commitSupplemental("supplement-bad", "Prefer metric units.", { tokens: 50_000 }),
    ).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(
        /^the commit asks for 50000 tokens; the supplemental zone has room for \d+ tokens/,
      ),
    });
    expect((await client.ledgers.state("supplement-bad")).supplements).toBeUndefined();
    const cli = await runConclave(nats.url, ["context", "supplement", "plan", "supplement-bad", "x".repeat(16_001)]);
    expect(cli.code).toBe(2);
    expect(cli.stderr.trim()).toBe(
      "conclave context: bad supplement plan: text: the text is over 16000 characters (see conclave context --help)",
    );
  }, 60_000);
});

/**
 * Budgets on a real nats-server: a runner with CONCLAVE_SESSION_BUDGET_USD
 * and a price file accepts a session's turns until the session has spent its
 * budget, then refuses the next one with `forbidden` and one clear line;
 * another session is not affected.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { isConclaveError } from "../../src/errors.ts";
import { runConclave } from "../helpers/cli.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const pricesFile = join(mkdtempSync(join(tmpdir(), "conclave-budget-")), "prices.json");
writeFileSync(
  pricesFile,
  JSON.stringify({
    models: { "scripted-model": { input_per_million: 1000, output_per_million: 1000 } },
    default_model: "scripted-model",
  }),
);

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({
    CONCLAVE_LLM_BASE_URL: model.url,
    CONCLAVE_LLM_MODEL: "scripted-model",
    CONCLAVE_PRICES: pricesFile,
    CONCLAVE_SESSION_BUDGET_USD: "0.01",
  }),
);
let client: ConclaveClient;

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel());
  await processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
}, 120_000);
afterAll(async () => {
  await client?.close();
  await model?.stop();
});

/** How a submission ended: its outcome, or the refusal's code and message. */
async function submitted(
  session: string,
  text: string,
): Promise<{ outcome?: string; code?: string; message?: string }> {
  try {
    return { outcome: (await client.submit(session, text).result).outcome.status };
  } catch (error) {
    if (!isConclaveError(error)) throw error;
    return { code: error.code, message: error.message };
  }
}

describe("a session budget", () => {
  it("accepts turns until the session has spent its budget, then refuses the next with one clear line", async () => {
    expect(await submitted("budget-1", "I'm stressed about my deadline tomorrow")).toMatchObject({
      outcome: expect.stringMatching(/Complete|PartialSuccess/),
    });
    const spent = (await client.cost("budget-1", { prices: pricesFile })).total.usd;
    expect(spent).toBeGreaterThanOrEqual(0.01); // one turn of a few thousand tokens at $1000 per million
    const refused = await submitted("budget-1", "and another thing");
    expect(refused.code).toBe("forbidden");
    expect(refused.message).toMatch(
      /^budget exceeded: session budget-1 has spent \$\d+\.\d{4} of its \$0\.01 budget \(CONCLAVE_SESSION_BUDGET_USD\)/,
    );
    expect(refused.message).not.toContain("\n");
    expect((await client.turns("budget-1")).map((turn) => turn.turn_id)).toEqual([1]);
  });

  it("leaves other sessions alone", async () => {
    expect((await submitted("budget-2", "hello")).outcome).toMatch(/Complete|PartialSuccess/);
  });

  it("`conclave send` reports the refusal as one line", async () => {
    const result = await runConclave(nats.url, ["send", "--session", "budget-1", "once more"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("budget exceeded: session budget-1");
  });
});

/**
 * A pipeline agent delegates (offline mode): the agent the pipeline
 * schedules hands work to an agent its definition names in `delegates`,
 * through the runner, one level deeper, with the session's memory; a
 * delegation to an agent it does not name is refused. The delegation is in
 * the turn's log.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./test/fixtures/pipelineTools/delegation.ts"]);
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
});

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

describe("a pipeline agent with delegates", () => {
  it("hands work to a named agent with the session's memory, and is refused for any other", async () => {
    const session = "pipeline-delegation";
    await client.submit(session, "I live in Lisbon.").result;
    const turn = client.submit(session, "hello there");
    const { turn_id: turnId } = await turn.ack;
    await turn.result;
    const events = await logOf(session, turnId);
    const answer = events.find(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.delegator",
    );
    expect(answer?.kind === "AGENT_COMPLETED" && answer.payload.output).toEqual({
      helped: { shout: "SHOUT: HELLO THERE", facts: expect.arrayContaining(["lives in Lisbon"]) },
      refused: "denied",
    });
    const delegated = events.flatMap((event) => (event.kind === "AGENT_DELEGATED" ? [event.payload] : []));
    // The refusal is the worker's (the agent call may not name acme.stranger): nothing reached the runner for it.
    expect(delegated).toEqual([
      expect.objectContaining({ agent_id: "acme.delegator", to: "acme.helper", depth: 1, ok: true }),
    ]);
  }, 60_000);
});

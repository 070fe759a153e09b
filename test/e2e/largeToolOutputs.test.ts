/**
 * Large tool outputs by reference: a result over the runner's limit
 * (CONCLAVE_TOOL_OUTPUT_MAX_BYTES, here 4 KiB) reaches the agent, and the
 * turn's log, as a preview and a handle; the whole is stored, and the agent
 * reads a slice of it back through the runner. Another turn's handle is refused.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { bigText } from "../fixtures/pipelineTools/bigTool.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

beforeAll(async () => {
  await processes.spawn("tools", [
    "worker",
    "--agents",
    "./test/fixtures/pipelineTools/reader.ts",
    "--tools",
    "./test/fixtures/pipelineTools/bigTool.ts",
  ]);
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner"], { CONCLAVE_TOOL_OUTPUT_MAX_BYTES: "4096" });
  client = await connect({ nc: await nats.connect("client") });
});

describe("a tool result over the limit", () => {
  it("is given by reference, read back in slices, and kept out of the log", async () => {
    const session = "large-outputs";
    const turn = client.submit(session, "read the report");
    const { turn_id: turnId } = await turn.ack;
    await turn.result;
    const events: EngineEvent[] = [];
    for await (const { event } of client.events(session, { turnId })) events.push(event);

    const whole = JSON.stringify({ report: bigText(100_000) });
    const answer = events.find((event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "acme.reader");
    expect(answer?.kind === "AGENT_COMPLETED" && answer.payload.output).toEqual({
      given: {
        truncated: true,
        preview: whole.slice(0, 30),
        handle: expect.stringMatching(new RegExp(`^${session}\\.${turnId}\\.[0-9a-f]{16}$`)),
        bytes: whole.length,
      },
      slice: whole.slice(50_000, 50_020),
      bytes: whole.length,
      refused: expect.stringMatching(/tool output someone-else\.1\.0123456789abcdef is not one of turn/),
    });
    const finished = events.find((event) => event.kind === "TOOL_CALL_FINISHED");
    expect(finished?.kind === "TOOL_CALL_FINISHED" && finished.payload.result).toMatchObject({
      truncated: true,
      bytes: whole.length,
    });
    // The log keeps the preview (2 KiB at most), not the 100 KB result.
    expect(JSON.stringify(finished).length).toBeLessThan(4_096);
  }, 60_000);
});

/**
 * Cancelling a suspended recipe run (a human node waiting for an answer, no
 * process holding it): it ends Cancelled once, its status says so, an
 * answer sent afterwards is refused, a second cancel changes nothing, and a
 * cancel racing an answer leaves one end in the log. Against a real stack:
 * nats-server, a runner and the recipe agents' worker, all processes; the
 * cancel through `conclave cancel` as a user types it.
 */
import { readFileSync } from "node:fs";
import { type KV, Kvm } from "@nats-io/kv";
import { beforeAll, describe, expect, it } from "vitest";
import { buckets } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { parseRecipeText } from "../../src/recipes/load.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { eventually, until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

const approval = () => parseRecipeText(readFileSync("recipes/approval.yaml", "utf8")) as JsonObject;

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
});

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

/** What was last done to a key of the human nodes' timeouts (read as a runner reads them: by a consumer). */
async function lastOperation(kv: KV, key: string): Promise<string | undefined> {
  let last: string | undefined;
  for await (const entry of await kv.history({ key })) last = entry.operation;
  return last;
}

/** Runs the approval recipe in `session` until it waits at its human node, recorded suspended. */
async function suspendedRun(session: string): Promise<number> {
  const run = await client.run(session, approval(), { inputs: { topic: "a doomed draft" } });
  expect(run).toMatchObject({ status: "suspended", node: "approve" });
  await until(async () => (await client.status(session, run.turnId))?.status === "suspended", {
    what: "suspended status",
  });
  return run.turnId;
}

describe("cancelling a suspended run", () => {
  it("ends it Cancelled once: status done/Cancelled, its timeout forgotten, answers refused, a second cancel a no-op", async () => {
    const session = "cancel-suspended-1";
    const turnId = await suspendedRun(session);
    const nc = await nats.connect("runner");
    const timeouts = await new Kvm(nc).open(buckets.suspended);
    expect(await lastOperation(timeouts, `${session}.${turnId}`)).toBe("PUT");

    const cancelled = await runConclave(nats.url, [
      "cancel",
      "--session",
      session,
      "--turn",
      String(turnId),
      "--reason",
      "the draft is not needed",
    ]);
    expect(cancelled).toMatchObject({ code: 0, stdout: `turn ${session}/${turnId}: cancelling\n` });

    const events = await logOf(session, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const ends = events.filter((event) => event.kind === "TURN_COMPLETED");
    expect(ends).toHaveLength(1);
    expect(events.at(-1)).toBe(ends[0]);
    expect(ends[0]?.kind === "TURN_COMPLETED" && ends[0].payload.outcome).toEqual({
      status: "Cancelled",
      reason: "the draft is not needed",
    });
    // Nothing ran after the suspension: its end follows it.
    expect(events.at(-2)?.kind).toBe("TURN_SUSPENDED");
    expect(await client.status(session, turnId)).toMatchObject({ status: "done", outcome: "Cancelled" });
    expect(await lastOperation(timeouts, `${session}.${turnId}`)).toBe("DEL");

    // An answer now is refused in one line; so is one from the CLI.
    await expect(
      client.resume(session, turnId, { input: { approved: true }, userId: "ana", role: "editor" }),
    ).rejects.toThrow(`turn ${turnId} was cancelled (the draft is not needed): it takes no answer`);
    const resumed = await runConclave(nats.url, [
      "resume",
      String(turnId),
      "--session",
      session,
      "--user-id",
      "ana",
      "--role",
      "editor",
      "--input",
      '{"approved": true}',
    ]);
    expect(resumed.code).toBe(2);
    expect(resumed.stderr.trim().split("\n")).toHaveLength(1);
    expect(resumed.stderr).toContain(`turn ${turnId} was cancelled`);

    // A second cancel changes nothing, and says so.
    expect(await client.cancel(session, turnId, "again")).toEqual({
      session_id: session,
      turn_id: turnId,
      status: "finished",
      outcome: "Cancelled",
    });
    const again = await runConclave(nats.url, ["cancel", "--session", session, String(turnId)]);
    expect(again).toMatchObject({ code: 0, stdout: `turn ${session}/${turnId} had already ended (Cancelled)\n` });
    expect((await logOf(session, turnId)).filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
    await nc.close();
  });

  it("a cancel racing an answer: one of them wins, and the log has one end", async () => {
    const session = "cancel-suspended-2";
    const turnId = await suspendedRun(session);
    const [cancel, resume] = await Promise.allSettled([
      client.cancel(session, turnId, "changed my mind"),
      client.resume(session, turnId, { input: { approved: true }, userId: "ana", role: "editor" }),
    ]);
    expect(cancel.status === "rejected" ? String(cancel.reason) : cancel.status).toBe("fulfilled");
    if (resume.status === "rejected") expect(String(resume.reason)).toMatch(/was cancelled/);
    const status = await eventually(
      () => client.status(session, turnId),
      (current) => current?.status === "done",
      { timeoutMs: 30_000 },
    );
    expect(status?.status).toBe("done");
    const events = await logOf(session, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const ends = events.filter((event) => event.kind === "TURN_COMPLETED");
    expect(ends).toHaveLength(1);
    const outcome = ends[0]?.kind === "TURN_COMPLETED" ? ends[0].payload.outcome.status : undefined;
    expect(status?.outcome).toBe(outcome);
    // The answer lost: cancelled where it waited. The answer won: the run went on, cancelled (or done) after.
    if (resume.status === "rejected") expect(outcome).toBe("Cancelled");
    else expect(["Cancelled", "Complete"]).toContain(outcome);
  });
});

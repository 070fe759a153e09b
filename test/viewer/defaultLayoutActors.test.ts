/**
 * The default `conclave up` layout (the offline model: the runner hosts the
 * scheduler, council, voice and critics with `--cognition runner`), every
 * process started with `--inspect` as `conclave up --inspect` starts them:
 * the inspection stream shows a scheduler, a council and each critic as
 * machine actors of the runner for a turn, children of its cognition actor,
 * each run to its final state. Before, they were plain calls: no such actor.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT } from "../../src/cli/localCluster.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { CRITIC_NAMES } from "../../src/cognition/critics.ts";
import { collectInspection } from "../../src/inspect/collector.ts";
import type { InspectionRecord } from "../../src/inspect/record.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const records: InspectionRecord[] = [];

beforeAll(async () => {
  collectInspection(await nats.connect("observer"), (record) => records.push(record));
  // One after the other: four processes compiling at once on a busy machine can take longer than their start allows.
  for (const { name, args } of DEFAULT_LAYOUT) await processes.spawn(name, [...args, "--inspect"]);
}, 120_000);

describe("the default layout under the inspector", () => {
  it("shows the runner's scheduler, council and critics as machine actors of a turn, each run to its end", async () => {
    expect(DEFAULT_LAYOUT.find((process) => process.name === "runner")?.args).toEqual([
      "runner",
      "--cognition",
      "runner",
    ]);
    const client = await nats.connect("client");
    const ack = await submitTurn(client, "inspected", {
      text: "I'm stressed about my deadline, can you help me plan?",
    });
    await watchTurn(client, ack, () => {}, 20_000);

    const actorsOf = (machine: string) =>
      records.filter(
        (record): record is Extract<InspectionRecord, { kind: "actor" }> =>
          record.kind === "actor" && record.machine === machine && record.process.startsWith("runner:"),
      );
    const ended = (session: string) =>
      records.some(
        (record) => record.kind === "snapshot" && record.session === session && record.snapshot.status === "done",
      );
    await until(
      () =>
        ["scheduler", "council", "critic"].every((machine) => actorsOf(machine).some((actor) => ended(actor.session))),
      { what: "a scheduler, council and critic actor of the runner, each done" },
    );
    const host = actorsOf("cognition");
    expect(host).toHaveLength(1);
    for (const machine of ["scheduler", "council", "critic"]) {
      for (const actor of actorsOf(machine)) expect(actor.parent, machine).toBe(host[0]!.session);
    }
    // One critic actor per critic and rendering: every critic judged this turn's reply.
    expect(actorsOf("critic").length).toBeGreaterThanOrEqual(CRITIC_NAMES.length);
    // The council's snapshot went from deciding to decided.
    const council = actorsOf("council")[0]!.session;
    const values = records
      .filter((record) => record.kind === "snapshot" && record.session === council)
      .map((record) => (record as Extract<InspectionRecord, { kind: "snapshot" }>).snapshot.value);
    expect(values.at(-1)).toBe("decided");
  });
});

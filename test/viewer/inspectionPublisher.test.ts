import { describe, expect, it } from "vitest";
import { assign, createActor, fromPromise, setup, toPromise } from "xstate";
import { collectInspection } from "../../src/inspect/collector.ts";
import { createInspectionPublisher, MAX_RECORD_BYTES } from "../../src/inspect/publisher.ts";
import { InspectionRecord, inspectSubject } from "../../src/inspect/record.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();

/** A machine whose context holds what JSON cannot: a cycle, a function, a bigint, a Map, a huge string. */
const awkward = setup({
  actors: { fetchData: fromPromise(async () => "x".repeat(100_000)) },
}).createMachine({
  id: "awkward",
  context: () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    return { cycle, callback: () => 1, big: 5n, table: new Map([["k", 1]]), blob: "", step: 0 };
  },
  initial: "loading",
  states: {
    loading: {
      invoke: {
        src: "fetchData",
        onDone: { target: "loaded", actions: assign({ blob: ({ event }) => event.output }) },
      },
    },
    loaded: { on: { NEXT: { target: "done", actions: assign({ step: 1 }) } } },
    done: { type: "final" },
  },
});

describe("the inspection publisher", () => {
  it("publishes compact, valid records with process-unique session ids, whatever the snapshot holds", async () => {
    const publisherNc = await nats.connect("worker");
    const collectorNc = await nats.connect("observer");
    const records: InspectionRecord[] = [];
    const raw: number[] = [];
    const rawSub = collectorNc.subscribe(inspectSubject("test:1"), {
      callback: (_, msg) => {
        raw.push(msg.data.length);
      },
    });
    collectInspection(collectorNc, (record) => records.push(record));
    await collectorNc.flush();

    const publisher = createInspectionPublisher(publisherNc, "test:1");
    const actor = createActor(awkward, { inspect: publisher });
    actor.start();
    await until(() => actor.getSnapshot().value === "loaded");
    actor.send({ type: "NEXT" });
    await toPromise(actor);
    await publisherNc.flush();
    await until(() => records.some((r) => r.kind === "snapshot" && r.snapshot.status === "done"));
    // Records may follow the final snapshot (the actor's end): wait for every one published to arrive.
    await until(() => raw.length >= publisher.published);
    rawSub.unsubscribe();

    expect(publisher.dropped).toBe(0);
    expect(raw.length).toBe(publisher.published);
    expect(Math.max(...raw)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    for (const record of records) {
      expect(record.session).toMatch(/^test:1:x:\d+$/);
      expect(record.process).toBe("test:1");
    }
    expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i));
    const root = records.find((r) => r.kind === "actor" && r.machine === "awkward");
    expect(root).toBeDefined();
    const child = records.find((r) => r.kind === "actor" && !r.machine);
    expect(child).toMatchObject({ parent: root?.session, root: root?.session });
    const values = records.flatMap((r) =>
      r.kind === "snapshot" && r.session === root?.session ? [r.snapshot.value] : [],
    );
    expect(values).toEqual(["loading", "loaded", "done"]);
    const loaded = records.find((r) => r.kind === "snapshot" && r.snapshot.value === "loaded");
    expect(loaded?.kind === "snapshot" && loaded.snapshot.context).toMatchObject({
      cycle: { self: "[circular]" },
      callback: "[function callback]",
      big: "5",
      table: { k: 1 },
      blob: expect.stringContaining("(100000 chars)"),
    });
  });

  it("trims a record over the size cap down to its state value", async () => {
    const sent: string[] = [];
    const tiny = createInspectionPublisher(
      {
        isClosed: () => false,
        publish: (_subject, data) => void sent.push(new TextDecoder().decode(data as Uint8Array)),
      },
      "tiny:1",
      400,
    );
    const actor = createActor(awkward, { inspect: tiny });
    actor.start();
    await until(() => actor.getSnapshot().value === "loaded");
    const snapshots = sent.map((text) => JSON.parse(text) as InspectionRecord).filter((r) => r.kind === "snapshot");
    const loaded = snapshots.find((r) => r.snapshot.value === "loaded");
    expect(loaded?.kind === "snapshot" && loaded.snapshot.context).toMatch(/^\[omitted: \d+ bytes in all\]$/);
    for (const text of sent) expect(text.length).toBeLessThanOrEqual(400);
    expect(tiny.published).toBe(sent.length);
    actor.stop();
  });

  it("never throws into the actor, even when publishing fails or the connection is closed", async () => {
    const failing = createInspectionPublisher(
      {
        isClosed: () => false,
        publish: () => {
          throw new Error("no");
        },
      },
      "broken:1",
    );
    const actor = createActor(awkward, { inspect: failing });
    actor.start();
    actor.send({ type: "NEXT" });
    expect(failing.dropped).toBeGreaterThan(0);

    const nc = await nats.connect("worker");
    await nc.close();
    const closed = createInspectionPublisher(nc, "closed:1");
    const second = createActor(awkward, { inspect: closed });
    expect(() => second.start()).not.toThrow();
    expect(closed.published).toBe(0);
  });

  it("lets the collector skip bad messages and keep going", async () => {
    const nc = await nats.connect("observer");
    const good: InspectionRecord[] = [];
    const bad: string[] = [];
    collectInspection(
      nc,
      (record) => good.push(record),
      (_, reason) => bad.push(reason),
    );
    await nc.flush();
    // Only processes that host actors may publish inspection: the observer just collects.
    const publisher = await nats.connect("worker");
    publisher.publish("conclave.inspect.x", "{not json");
    publisher.publish("conclave.inspect.x", JSON.stringify({ v: 2, kind: "actor" }));
    publisher.publish(
      "conclave.inspect.x",
      JSON.stringify({ v: 1, process: "x", seq: 0, ts: 1, session: "x:x:0", kind: "event", event: { type: "GO" } }),
    );
    await until(() => good.length === 1 && bad.length === 2);
    expect(InspectionRecord.safeParse(good[0]).success).toBe(true);
  });
});

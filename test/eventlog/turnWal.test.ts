/**
 * The turn WAL's partitions (src/eventlog/turnWal.ts): their count is fixed when the WAL is made and
 * read back by every runner after; a WAL made before partitions is brought over once its entries ran.
 * The cases run in order against one server: the WAL made by the first is the one the next ones find.
 */
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { LEGACY_RUNNER_CONSUMER, runnerConsumer, streams, subjects } from "../../src/bus/subjects.ts";
import { isConclaveError } from "../../src/errors.ts";
import { ensureStream } from "../../src/eventlog/streams.ts";
import { checkPartitions, ensureTurnWal } from "../../src/eventlog/turnWal.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

describe("the turn WAL's partitions", () => {
  it("wait for a WAL made before partitions to be run empty, then replace its shared consumer", async () => {
    const nc = await nats.connect("runner");
    const jsm = await jetstreamManager(nc);
    // What a runner of the version before partitions made: the stream, one shared consumer, an entry in it.
    await ensureStream(jsm, {
      name: streams.turns,
      subjects: [subjects.allWal],
      storage: StorageType.File,
      retention: RetentionPolicy.Workqueue,
    });
    await jsm.consumers.add(streams.turns, { durable_name: LEGACY_RUNNER_CONSUMER, ack_policy: AckPolicy.Explicit });
    await jetstream(nc).publish("conclave.wal.old-session", "{}");

    const refused = await ensureTurnWal(jsm, 4).catch((error: unknown) => error);
    expect(isConclaveError(refused, "unavailable"), String(refused)).toBe(true);
    expect(String(refused)).toMatch(/holds 1 entry of runners from before partitions/);
    await expect(jsm.consumers.info(streams.turns, runnerConsumer(0))).rejects.toThrow(/consumer not found/);

    // A runner of the old version runs the entry: the WAL comes over, with the count asked for.
    const legacy = await jetstream(nc).consumers.get(streams.turns, LEGACY_RUNNER_CONSUMER);
    const entry = await legacy.next({ expires: 2_000 });
    await entry!.ackAck();
    expect(await ensureTurnWal(jsm, 4)).toBe(4);
    await expect(jsm.consumers.info(streams.turns, LEGACY_RUNNER_CONSUMER)).rejects.toThrow(/consumer not found/);
    const consumers = await Promise.all(
      [0, 1, 2, 3].map((partition) => jsm.consumers.info(streams.turns, runnerConsumer(partition))),
    );
    expect(consumers.map((info) => info.config.filter_subject)).toEqual([
      "conclave.wal.0.*",
      "conclave.wal.1.*",
      "conclave.wal.2.*",
      "conclave.wal.3.*",
    ]);
  });

  it("keep the count the WAL was made with: asked for none, a runner takes it; asked for another, it is refused", async () => {
    const jsm = await jetstreamManager(await nats.connect("runner"));
    expect(await ensureTurnWal(jsm)).toBe(4);
    const refused = await ensureTurnWal(jsm, 8).catch((error: unknown) => error);
    expect(isConclaveError(refused, "config"), String(refused)).toBe(true);
    expect(String(refused)).toMatch(/has 4 partitions, fixed when it was made: 8 cannot be asked of it/);
  });

  it("are a whole number from 1 to 256", () => {
    expect(checkPartitions(1)).toBe(1);
    for (const bad of [0, -1, 1.5, 257, Number.NaN])
      expect(() => checkPartitions(bad)).toThrow(/partitions must be a whole number from 1 to 256/);
  });
});

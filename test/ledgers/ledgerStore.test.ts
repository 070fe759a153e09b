/**
 * LedgerStore on a real nats-server, two stores (as two runners have) writing the same session at
 * once: every write lands once, those that met another were decided again, and the log folds to
 * what both see.
 */
import { describe, expect, it } from "vitest";
import { LedgerStore } from "../../src/ledgers/ledgerStore.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

describe("two ledger stores writing one session at once", () => {
  it("store every write once, deciding again those that met another, and fold to the same ledgers", async () => {
    let conflicts = 0;
    const open = async () =>
      LedgerStore.open(await nats.connect("runner"), {
        onConflict: () => {
          conflicts += 1;
        },
      });
    const [a, b] = await Promise.all([open(), open()]);
    const session = "two-stores";
    const titles = Array.from({ length: 20 }, (_, index) => `step ${index + 1}`);
    await Promise.all(
      titles.flatMap((title, index) => [
        a.write({ session_id: session, op: "task.add_item", item: { title } }, "a"),
        // The same items from the other store, half of them in the other order: each is stored once.
        b.write({ session_id: session, op: "task.add_item", item: { title: titles[titles.length - 1 - index]! } }, "b"),
      ]),
    );
    expect(conflicts).toBeGreaterThan(0);
    const [seenByA, seenByB] = await Promise.all([a.state(session), b.state(session)]);
    expect(seenByA).toEqual(seenByB);
    expect(seenByA.events).toBe(20);
    expect(seenByA.task.items.map((item) => item.title).sort()).toEqual([...titles].sort());
    const replay = await a.replay(session);
    expect(replay.matches).toBe(true);
    expect(replay.rebuilt).toEqual(seenByA);
  });
});

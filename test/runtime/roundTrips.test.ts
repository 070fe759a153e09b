/**
 * The turn's sequential round trips, counted on the wire: `conclave up`'s
 * layout (a runner and three workers, each its own process) runs a few turns
 * one at a time while a wiretap sees every request and reply (bench/hops.ts,
 * the same analysis `npm run bench` reports). A change that adds a hop to the
 * client's path fails here, not only in a bench run nobody reads.
 */
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BenchCluster, startBenchCluster } from "../../bench/cluster.ts";
import { conclaveTurn } from "../../bench/conclave.ts";
import { analyseHops, Wiretap } from "../../bench/hops.ts";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { until } from "../helpers/wait.ts";

/** The issue's bound: submit → TURN_COMPLETED in at most this many sequential round trips. */
const MAX_CLIENT_ROUND_TRIPS = 10;
const TURNS = 8;
const TEXTS = [
  "I'm stressed about my deadline",
  "I feel overwhelmed and anxious, everything is too much. Can you help me?",
];

let cluster: BenchCluster;
let client: NatsConnection;
let observer: NatsConnection;

beforeAll(async () => {
  cluster = await startBenchCluster();
  client = await connectBus(busOptions("client", { servers: cluster.url, name: "round-trips-client" }));
  observer = await cluster.connectInstrument("round-trips-wiretap");
}, 60_000);

afterAll(async () => {
  await client?.close();
  await observer?.close();
  await cluster?.stop();
});

describe("a turn's round trips on the wire", () => {
  it(`reaches TURN_COMPLETED from its submission in at most ${MAX_CLIENT_ROUND_TRIPS} sequential round trips`, async () => {
    const settled = new Set<string>();
    // The runner's last write of a turn (its status `done`) ends its bookkeeping: the next turn starts after it.
    const statuses: Subscription = observer.subscribe(`$KV.${buckets.turns}.>`, {
      callback: (_error, msg) => {
        if (msg.string().includes('"status":"done"')) settled.add(msg.subject.slice(`$KV.${buckets.turns}.`.length));
      },
    });
    const tap = await Wiretap.start(observer);
    for (let i = 0; i < TURNS; i++) {
      const turn = await conclaveTurn(client, "round-trips", TEXTS[i % TEXTS.length]!);
      expect(turn.ok, `turn ${i + 1} Complete`).toBe(true);
      await until(() => settled.has(`round-trips.${i + 1}`), { what: `turn ${i + 1} settled` });
    }
    const hops = analyseHops(tap.stop());
    statuses.unsubscribe();

    const clientRoundTrips = hops.submit.rtts + hops.startRtts + hops.turnRtts;
    const shape = [
      `submission: ${hops.submit.rtts} (${hops.submit.nestedLabel || "nothing nested"})`,
      ...hops.phases.map(
        ({ phase, groups }) =>
          `${phase}: ${groups.map((g) => (g.nestedRtts ? `${g.label} (+${g.nestedRtts}: ${g.nestedLabel})` : g.label)).join(" → ")}`,
      ),
    ];
    expect(hops.turns, "every turn seen on the wire").toBe(TURNS);
    // The analysis found the runner's requests (an analysis that finds none would count nothing and pass).
    expect(hops.hops, `the turn's hops: ${shape.join("; ")}`).toBeGreaterThanOrEqual(3);
    expect(clientRoundTrips, `round trips: ${shape.join("; ")}`).toBeLessThanOrEqual(MAX_CLIENT_ROUND_TRIPS);
  });
});

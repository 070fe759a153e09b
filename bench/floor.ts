import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { round, type Summary, summarize } from "./stats.ts";

/** The transport's own costs on the bench's server: what no runtime on NATS can go below. */
export interface FloorResult {
  requestBytes: number;
  eventBytes: number;
  /** Sequential request/reply round trips (responder on its own connection, echoing the payload). */
  requestReply: Summary;
  /** One JetStream publish awaited before the next (ms per publish). */
  jsPublishSequential: Summary;
  /** Publishes fired back to back, then all acks awaited: the cost per event (ms). */
  jsPublishPipelinedPerEventMs: number;
  jsPublishPipelinedCount: number;
}

const SUBJECT = "bench.floor.echo";
const STREAM = "BENCH_FLOOR";

export async function measureFloor(
  connect: (name: string) => Promise<NatsConnection>,
  options: { requestBytes: number; eventBytes: number; requests?: number; publishes?: number },
): Promise<FloorResult> {
  const requests = options.requests ?? 2_000;
  const publishes = options.publishes ?? 5_000;
  const responder = await connect("bench-floor-responder");
  const client = await connect("bench-floor-client");
  try {
    responder.subscribe(SUBJECT, {
      callback: (_error, msg) => {
        msg.respond(msg.data);
      },
    });
    await responder.flush();
    const payload = new Uint8Array(options.requestBytes).fill(120);
    const rtt: number[] = [];
    for (let i = 0; i < requests + 200; i++) {
      const started = performance.now();
      await client.request(SUBJECT, payload, { timeout: 5_000 });
      if (i >= 200) rtt.push(performance.now() - started);
    }

    // A stream configured like the event log (file storage, msgID dedup window), on the same server.
    const jsm = await jetstreamManager(client);
    await jsm.streams.add({
      name: STREAM,
      subjects: ["bench.floor.js.>"],
      storage: StorageType.File,
      duplicate_window: 120_000_000_000,
    });
    const js = jetstream(client);
    const event = new Uint8Array(options.eventBytes).fill(121);
    const sequential: number[] = [];
    for (let i = 0; i < 1_100; i++) {
      const started = performance.now();
      await js.publish(`bench.floor.js.seq.${i % 50}`, event, { msgID: `seq.${i}` });
      if (i >= 100) sequential.push(performance.now() - started);
    }
    const started = performance.now();
    const acks = [];
    for (let i = 0; i < publishes; i++) {
      acks.push(js.publish(`bench.floor.js.pipe.${i % 50}`, event, { msgID: `pipe.${i}` }));
    }
    await Promise.all(acks);
    const pipelinedMs = performance.now() - started;
    await jsm.streams.delete(STREAM);
    return {
      requestBytes: options.requestBytes,
      eventBytes: options.eventBytes,
      requestReply: summarize(rtt),
      jsPublishSequential: summarize(sequential),
      jsPublishPipelinedPerEventMs: round(pipelinedMs / publishes, 4),
      jsPublishPipelinedCount: publishes,
    };
  } finally {
    await client.close();
    await responder.close();
  }
}

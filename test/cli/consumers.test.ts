/**
 * JetStream consumers a CLI command makes are gone from the server once it
 * exits (issue 42): ten real `conclave send` processes against a real
 * nats-server and an in-process runner and worker, and the consumers of every
 * Conclave stream counted before and after, as an observer (stream info).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { nanos } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { isStreamNotFound } from "../../src/bus/errors.ts";
import { buckets, eventStream, eventStreamOf, streams, subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { EPHEMERAL_INACTIVE_MS, orderedConsumer, releaseConsumer } from "../../src/eventlog/consumers.ts";
import { eventStreamCount, eventStreamNames } from "../../src/eventlog/eventStreams.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const nats = useNatsServer();
useInProcessStack(nats);
let observer: NatsConnection;

beforeAll(async () => {
  observer = await nats.connect("observer");
});

/** Every Conclave stream the observer may read the info of: the event log's, the others, and the KV buckets'. */
const streamNames = async (): Promise<string[]> => [
  ...eventStreamNames(await eventStreamCount(observer)),
  ...Object.values(streams).filter((name) => name !== streams.audit),
  ...Object.values(buckets).map((bucket) => `KV_${bucket}`),
];

/** The consumers each stream has now (0 for a stream not made yet). */
async function consumerCounts(): Promise<Record<string, number>> {
  const jsm = await jetstreamManager(observer);
  const counts: Record<string, number> = {};
  for (const name of await streamNames()) {
    try {
      counts[name] = (await jsm.streams.info(name)).state.consumer_count;
    } catch (error) {
      if (!isStreamNotFound(error)) throw error;
      counts[name] = 0;
    }
  }
  return counts;
}

describe("consumers of CLI commands", () => {
  it("leaves no consumer on the server after ten conclave sends exit", { timeout: 180_000 }, async () => {
    const session = "consumers-cli";
    // A first turn sets up what lives on (the session's memory graph, followed by the worker).
    const first = await runConclave(nats.url, ["send", "--session", session, "hello"]);
    expect(first.code, first.stderr).toBe(0);
    const before = await consumerCounts();
    const sends = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        runConclave(nats.url, ["send", "--json", "--session", session, `message ${index}`]),
      ),
    );
    for (const sent of sends) {
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toContain('"TURN_COMPLETED"');
    }
    // Counted as soon as they exit: left to expire, a consumer would outlive its command by seconds.
    expect(await consumerCounts()).toEqual(before);
  });

  it("deletes the consumer of conclave events --follow stopped with Ctrl-C", { timeout: 120_000 }, async () => {
    const session = "consumers-follow";
    const sent = await runConclave(nats.url, ["send", "--session", session, "hello"]);
    expect(sent.code, sent.stderr).toBe(0);
    const before = await consumerCounts();
    const stream = eventStreamOf(session, await eventStreamCount(observer));
    const child = spawn(process.execPath, [CONCLAVE_BIN, "events", "--session", session, "--follow", "--json"], {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = once(child, "exit");
    // Its first event printed: it reads through its consumer (in the session's stream), and follows on.
    await once(child.stdout, "data");
    expect(await consumerCounts()).toEqual({ ...before, [stream]: (before[stream] ?? 0) + 1 });
    child.kill("SIGINT");
    const [code] = await exited;
    expect(code).toBe(0);
    expect(await consumerCounts()).toEqual(before);
  });

  it("makes its consumers with the short inactivity threshold, for a reader that dies", {
    timeout: 120_000,
  }, async () => {
    const consumer = await orderedConsumer(jetstream(observer), eventStream(0), {
      filter_subjects: subjects.streamEvents(0),
    });
    expect((await consumer.info()).config.inactive_threshold).toBe(nanos(EPHEMERAL_INACTIVE_MS));
    await releaseConsumer(consumer);

    const session = "consumers-killed";
    const sent = await runConclave(nats.url, ["send", "--session", session, "hello"]);
    expect(sent.code, sent.stderr).toBe(0);
    const before = await consumerCounts();
    const stream = eventStreamOf(session, await eventStreamCount(observer));
    const child = spawn(process.execPath, [CONCLAVE_BIN, "events", "--session", session, "--follow", "--json"], {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = once(child, "exit");
    await once(child.stdout, "data");
    child.kill("SIGKILL"); // no chance to delete anything
    await exited;
    // nats-server deletes it once its last pull expired and the threshold passed: seconds, not the library's 5 min.
    const after = await eventually(consumerCounts, (counts) => counts[stream] === before[stream], {
      timeoutMs: 60_000,
      everyMs: 500,
    });
    expect(after).toEqual(before);
  });
});

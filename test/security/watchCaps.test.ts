import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { requestStream } from "../../src/bus/request.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { watchTurn } from "../../src/client/turns.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { DEFAULT_EVENT_STREAMS, eventStreamNames } from "../../src/eventlog/eventStreams.ts";
import { freePort, REPO_ROOT, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { withTenants } from "../../src/nats/tenants.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";

/**
 * A tenant's follow-watches (`conclave.turn.watch.<session>`, relayed by a
 * runner) each hold a JetStream consumer: a runner serves at most
 * CONCLAVE_WATCH_MAX_PER_TENANT per tenant and CONCLAVE_WATCH_MAX_PER_SESSION
 * per session (more get `busy`), and ends one whose requester stopped
 * renewing it, deleting its consumer. Tenant accounts as `withTenants` writes
 * them; a real `conclave runner`; no worker, so no turn ever completes: every
 * watch here waits until it is ended.
 */
let server: RunningNatsServer;
let dir: string;
let runtime: NatsConnection;
const opened: NatsConnection[] = [];
const KEEPALIVE_MS = 10_000;
const processes = useConclaveProcesses(
  () => server.url,
  () => ({
    CONCLAVE_WATCH_MAX_PER_TENANT: "3",
    CONCLAVE_WATCH_MAX_PER_SESSION: "2",
    CONCLAVE_WATCH_KEEPALIVE_MS: String(KEEPALIVE_MS),
  }),
);

const asTenant = async (name: string): Promise<NatsConnection> => {
  const nc = await connect({ servers: server.url, user: name, pass: `${name}-secret` });
  opened.push(nc);
  return nc;
};

/** The consumers on the event log's streams now: each follow-watch holds one. */
async function consumers(): Promise<number> {
  const jsm = await jetstreamManager(runtime);
  let count = 0;
  for (const stream of eventStreamNames(DEFAULT_EVENT_STREAMS))
    count += (await jsm.streams.info(stream)).state.consumer_count;
  return count;
}

/** Starts a follow-watch of turn 1 of `session` as `nc` (no renewals: a bare request); settles when it ends. */
const openWatch = (nc: NatsConnection, session: string): Promise<unknown> =>
  requestStream(
    nc,
    subjects.turnWatch(session),
    { turn_id: 1, follow: true, timeout_ms: 120_000 },
    // Nothing is ever sent but the end of the stream, or an error.
    { safeParse: () => ({ success: true }) } as never,
    () => {},
    { timeoutMs: 125_000 },
  ).catch((error: unknown) => error);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-watch-caps-"));
  const config = join(dir, "nats.conf");
  const base = readFileSync(join(REPO_ROOT, "nats.conf"), "utf8");
  const tenants = ["alice", "bob", "carol"].map((name) => ({ name, password: `${name}-secret` }));
  writeFileSync(config, withTenants(base, tenants));
  server = await startNatsServer({ config, port: await freePort(), storeDir: join(dir, "store") });
  await processes.spawn("runner", ["runner"]);
  runtime = await connectBus(busOptions("runner", { servers: server.url }));
  opened.push(runtime);
});
afterAll(async () => {
  await Promise.allSettled(opened.map((nc) => nc.close()));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Waits (bounded) until the event log has `count` consumers. */
const consumersReach = (count: number, timeoutMs = 30_000) =>
  until(async () => (await consumers()) === count, { timeoutMs, everyMs: 200, what: `${count} consumers` });

describe("follow-watches", () => {
  it("are capped per tenant and per session: over the cap, busy; closed, the places come back", async () => {
    const base = await consumers();
    const alice = await asTenant("alice");
    const held = ["a1", "a2", "a3"].map((session) => openWatch(alice, session));
    await consumersReach(base + 3);
    const refused = await openWatch(alice, "a4");
    expect(refused).toBeInstanceOf(RemoteCallError);
    expect((refused as RemoteCallError).code).toBe("busy");
    expect((refused as Error).message).toContain("CONCLAVE_WATCH_MAX_PER_TENANT");
    // Another tenant is not held back by alice's watches, but by its session's cap.
    const bob = await asTenant("bob");
    const bobs = [openWatch(bob, "same"), openWatch(bob, "same")];
    await consumersReach(base + 5);
    const sameSession = (await openWatch(bob, "same")) as RemoteCallError;
    expect(sameSession.code).toBe("busy");
    expect(sameSession.message).toContain("CONCLAVE_WATCH_MAX_PER_SESSION");
    // The requesters leave: their watches end (unrenewed) and their consumers go.
    await Promise.all([alice.close(), bob.close()]);
    await consumersReach(base, KEEPALIVE_MS * 3);
    await Promise.all([...held, ...bobs]);
  });

  it("end, their consumer deleted, once the watcher is gone; a renewed one goes on", async () => {
    const base = await consumers();
    // Renewed by the client's watchTurn every 5 s: it outlives the window of the one opened after it.
    const renewing = await asTenant("carol");
    const ack = { session_id: "kept", turn_id: 1, events_subject: subjects.turnWatch("kept") } as TurnAck;
    let renewedEnded = false;
    const renewed = watchTurn(renewing, ack, () => {}, 120_000)
      .catch((error: unknown) => error)
      .finally(() => {
        renewedEnded = true;
      });
    await consumersReach(base + 1);
    const leaving = await asTenant("carol");
    void openWatch(leaving, "left");
    await consumersReach(base + 2);
    await leaving.close();
    // Within the keepalive window (and the slack of a loaded machine), the watch of the closed connection ends.
    await consumersReach(base + 1, KEEPALIVE_MS * 3);
    expect(renewedEnded).toBe(false);
    await renewing.close();
    await renewed;
    await consumersReach(base, KEEPALIVE_MS * 3);
  });
});

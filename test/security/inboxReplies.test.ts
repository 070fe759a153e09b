import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInbox, type Msg, type NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus, INBOX_PREFIXES } from "../../src/bus/connection.ts";
import { isInboxReply, REPLY_PREFIXES } from "../../src/bus/replies.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { DEFAULT_NATS_CONFIG, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * A process answers a request with its own publish rights, on the reply
 * subject the request names: only a real inbox of a role it serves is
 * answered — `_INBOX.` and the role prefixes followed by tokens, or `_R_.`
 * across accounts — never a look-alike (`_INBOXevil`) nor the inbox of a peer
 * of its own role (`_INBOX_runner.…` to a runner: its replies, acks and
 * deliveries arrive there).
 */

describe("isInboxReply", () => {
  it("takes the inboxes of the roles the runner serves, followed by tokens, and tenants' response subjects", () => {
    for (const reply of [
      "_INBOX.abc.1",
      "_INBOX.x",
      "_INBOX_client.Jx3HN.42",
      "_INBOX_worker.abc.1",
      "_INBOX_operator.abc",
      "_R_.xyz.1",
      createInbox(),
      createInbox(INBOX_PREFIXES.client),
      createInbox(INBOX_PREFIXES.worker),
      `${createInbox(INBOX_PREFIXES.client)}.17`,
    ])
      expect(isInboxReply(reply, "runner"), reply).toBe(true);
  });

  it("refuses look-alikes, its own role's inbox, bare prefixes, wildcards and data subjects", () => {
    for (const reply of [
      undefined,
      "",
      "_INBOXevil",
      "_INBOXevil.x",
      "_INBOX",
      "_INBOX.",
      "_INBOX..x",
      "_INBOX.x.",
      "_INBOX.*",
      "_INBOX.>",
      "_INBOX.a.>",
      "_INBOX.a b",
      "_INBOX_runner.x",
      createInbox(INBOX_PREFIXES.runner),
      "_INBOX_observer.x",
      "_INBOX_clientevil.x",
      "_INBOX_client",
      "_R_",
      "_R_.",
      "_R_evil.x",
      "$JS.ACK.CONCLAVE_EVENTS.push.1.2.3.4.5",
      "conclave.events.s.1",
      "$KV.conclave_sessions.counter.s",
    ])
      expect(isInboxReply(reply, "runner"), String(reply)).toBe(false);
  });

  it("a worker answers the runner and the operator only", () => {
    expect(isInboxReply(createInbox(INBOX_PREFIXES.runner), "worker")).toBe(true);
    expect(isInboxReply("_INBOX_operator.abc.1", "worker")).toBe(true);
    for (const reply of ["_INBOX.x", "_INBOX_client.x", "_INBOX_worker.x", "_R_.x.1", "_INBOX_runnerevil.x"])
      expect(isInboxReply(reply, "worker"), reply).toBe(false);
  });

  it("matches what nats.conf lets each role publish: every prefix answered is one the role may reply to", () => {
    const conf = readFileSync(DEFAULT_NATS_CONFIG, "utf8");
    for (const role of ["runner", "worker"] as const) {
      const block = conf.slice(conf.indexOf(`user: ${role},`));
      const publish = block.slice(block.indexOf("publish:"), block.indexOf("subscribe:"));
      for (const prefix of REPLY_PREFIXES[role]) expect(publish, `${role} ${prefix}`).toContain(`"${prefix}>"`);
    }
  });
});

describe("a runner asked to answer on a subject that is no inbox of a role it serves", () => {
  // A server without nats.conf's permissions: nothing but the runner's own check stands between
  // a request's reply subject and the runner's publish.
  let server: RunningNatsServer;
  let dir = "";
  let wide: NatsConnection;
  afterAll(async () => {
    await wide?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const processes = useConclaveProcesses(() => server.url);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "conclave-open-"));
    const users = (["client", "runner", "worker", "observer"] as const)
      .map((role) => `      { user: ${role}, password: "conclave-dev-${role}" }`)
      .join("\n");
    writeFileSync(
      join(dir, "nats.conf"),
      `listen: 127.0.0.1:4222\njetstream { max_memory_store: 64MB, max_file_store: 512MB }\naccounts {\n  CONCLAVE {\n    jetstream: enabled\n    users: [\n${users}\n    ]\n  }\n}\n`,
    );
    server = await startNatsServer({ config: join(dir, "nats.conf"), storeDir: join(dir, "store") });
    await processes.spawn("runner", ["runner"]);
    wide = await connectBus(busOptions("client", { servers: server.url }));
  });

  it("answers none of them, and goes on answering real requests", async () => {
    const FORGED = ["_INBOXevil", "_INBOX_runner.x", "_INBOX_observer.x"];
    const received: Msg[] = [];
    for (const subject of FORGED)
      wide.subscribe(subject, {
        callback: (_error, msg) => {
          received.push(msg);
        },
      });
    await wide.flush();

    const targets = [
      subjects.turnSubmit("forged"),
      subjects.turnWatch("forged"),
      subjects.turnCancel("forged"),
      subjects.turnResume("forged"),
      subjects.turnRollback("forged"),
      subjects.memorySearch("forged"),
      subjects.ledger("forged"),
      subjects.agentLedger("forged"),
    ];
    const bad = new TextEncoder().encode("{not json");
    // Bad JSON: each is refused at once, before any await, so each would be answered before the next message.
    for (const subject of targets) for (const reply of FORGED) wide.publish(subject, bad, { reply });
    for (const reply of FORGED) wide.publish("$SRV.PING", new Uint8Array(), { reply });

    // The same requests on a real inbox are answered: once they are, the forged ones were handled before them
    // (one runner, messages in order), and anything the runner sent to a forged subject arrived before too.
    for (const subject of targets) {
      const answer = await wide.request(subject, bad, { timeout: 5_000 });
      expect(answer.headers?.get("Nats-Service-Error-Code"), subject).toBe("400");
    }
    const pong = await wide.request("$SRV.PING", new Uint8Array(), { timeout: 5_000 });
    expect(pong.json<{ name: string }>().name).toBe("conclave-runner");
    await wide.flush();
    expect(received.map((msg) => msg.subject)).toEqual([]);
  });
});

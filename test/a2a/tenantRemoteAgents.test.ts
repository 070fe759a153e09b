/**
 * Tenants and remote A2A agents, on a real nats-server with two tenant
 * accounts and a runner in this process: a tenant's recipe naming a remote
 * agent is refused at submission unless the operator lets tenants name them
 * (CONCLAVE_A2A_TENANTS) and the allowlist admits the card
 * (CONCLAVE_A2A_ALLOW); nothing is fetched for a refused one.
 */

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { submitTurn } from "../../src/client/turns.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { freePort, REPO_ROOT, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { withTenants } from "../../src/nats/tenants.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";

let server: RunningNatsServer;
let dir: string;
let runner: Runner;
let alice: NatsConnection;
let operator: NatsConnection;
/** A loopback server standing for the remote agent: it must never be asked for a refused recipe. */
let agent: Server;
let cardUrl: string;
const asked: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-tenant-a2a-"));
  const config = join(dir, "nats.conf");
  const base = readFileSync(join(REPO_ROOT, "nats.conf"), "utf8");
  writeFileSync(config, withTenants(base, [{ name: "alice", password: "alice-secret" }]));
  server = await startNatsServer({ config, port: await freePort(), storeDir: join(dir, "store") });
  const port = await freePort();
  cardUrl = `http://127.0.0.1:${port}/.well-known/agent-card.json`;
  agent = createServer((request, response) => {
    asked.push(`${request.method} ${request.url}`);
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => agent.listen(port, "127.0.0.1", resolve));
  runner = await Runner.start(await connectBus(busOptions("runner", { servers: server.url })));
  alice = await connect({ servers: server.url, user: "alice", pass: "alice-secret" });
  operator = await connectBus(busOptions("client", { servers: server.url }));
});
afterEach(() => {
  delete process.env.CONCLAVE_A2A_ALLOW;
  delete process.env.CONCLAVE_A2A_TENANTS;
});
afterAll(async () => {
  await runner?.stop();
  await Promise.allSettled([alice?.close(), operator?.close()]);
  await server?.stop();
  await new Promise((resolve) => agent?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A workflow whose one step asks the remote agent at `card`. */
const recipe = (name: string, card: string): JsonObject => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name },
  policy: { max_retries: 0 },
  definitions: { echo: { type: "agent", id: "remote.echo", a2a: { card_url: card } } },
  workflow: { start: "ask", steps: { ask: { type: "agent", agent: "echo" } } },
});

/** The error a submission was refused with, or null when it was accepted. */
async function refusalOf(nc: NatsConnection, session: string, card: string): Promise<RemoteCallError | null> {
  try {
    await submitTurn(nc, session, { recipe: { document: recipe(session, card), inputs: {} } });
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(RemoteCallError);
    return error as RemoteCallError;
  }
}

describe("a tenant's remote agents", () => {
  it("are refused by default, even an allowlisted one the operator's own client may use", async () => {
    process.env.CONCLAVE_A2A_ALLOW = "127.0.0.1";
    const refused = await refusalOf(alice, "tenant-a2a-1", cardUrl);
    expect(refused?.code).toBe("forbidden");
    expect(refused?.message).toContain("remote.echo: remote agent not allowed (a tenant's recipe may not name");
    expect(asked).toEqual([]);
    expect(await refusalOf(operator, "operator-a2a-1", cardUrl)).toBeNull();
  });

  it("are refused off the allowlist, for a tenant and the operator alike", async () => {
    process.env.CONCLAVE_A2A_TENANTS = "1";
    process.env.CONCLAVE_A2A_ALLOW = "agents.example.com";
    const metadata = "http://169.254.169.254/latest/meta-data/";
    for (const [nc, session] of [
      [alice, "tenant-a2a-2"],
      [operator, "operator-a2a-2"],
    ] as const) {
      const refused = await refusalOf(nc, session, metadata);
      expect(refused?.code).toBe("forbidden");
      expect(refused?.message).toMatch(/remote\.echo: remote agent not allowed$/);
    }
    expect(await refusalOf(alice, "tenant-a2a-3", cardUrl)).toMatchObject({ code: "forbidden" });
    expect(asked).toEqual([]);
  });

  it("are accepted when the operator lets tenants name them and the allowlist admits the card", async () => {
    process.env.CONCLAVE_A2A_TENANTS = "1";
    process.env.CONCLAVE_A2A_ALLOW = cardUrl;
    expect(await refusalOf(alice, "tenant-a2a-4", cardUrl)).toBeNull();
  });
});

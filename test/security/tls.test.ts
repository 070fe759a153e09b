import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { AuthorizationError } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus, ROLES } from "../../src/bus/connection.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { type LocalCluster, startLocalCluster } from "../../src/cli/localCluster.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { freePort, REPO_ROOT, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { makeTestPki, makeUserNkey, type TestPki } from "../helpers/tls.ts";

/**
 * A production stack: nats-server runs deploy/nats.production.conf unchanged
 * (TLS required, client certificates verified, one nkey user per role), and
 * `conclave up`'s cluster (a runner and three workers, as processes) gets its
 * credentials only from environment variables naming files.
 */
const PRODUCTION_CONF = join(REPO_ROOT, "deploy", "nats.production.conf");
const run = promisify(execFile);

let dir = "";
let pki: TestPki;
let server: RunningNatsServer | undefined;
let cluster: LocalCluster | undefined;
const keys: Record<string, ReturnType<typeof makeUserNkey>> = {};

/** What a Conclave process of the given seed needs, as environment: production, TLS files, a seed file. */
const clientEnv = (seedFile: string): NodeJS.ProcessEnv => ({
  CONCLAVE_ENV: "production",
  CONCLAVE_NATS_URL: server!.url,
  CONCLAVE_NATS_TLS_CA: pki.ca,
  CONCLAVE_NATS_TLS_CERT: pki.clientCert,
  CONCLAVE_NATS_TLS_KEY: pki.clientKey,
  CONCLAVE_NATS_NKEY_SEED_FILE: seedFile,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-tls-"));
  pki = await makeTestPki(dir);
  for (const name of [...ROLES, "operator"]) keys[name] = makeUserNkey(dir, name);
  server = await startNatsServer({
    config: PRODUCTION_CONF,
    tls: true,
    storeDir: join(dir, "jetstream"),
    env: {
      ...process.env,
      ...Object.fromEntries(
        Object.entries(keys).map(([name, key]) => [`CONCLAVE_NKEY_${name.toUpperCase()}`, key.publicKey]),
      ),
      CONCLAVE_NATS_SERVER_CERT: pki.serverCert,
      CONCLAVE_NATS_SERVER_KEY: pki.serverKey,
      CONCLAVE_NATS_CA: pki.ca,
    },
  });
  cluster = await startLocalCluster({
    url: server.url,
    dataDir: join(dir, "data"),
    log: () => {},
    env: {
      CONCLAVE_ENV: "production",
      CONCLAVE_LOG: "quiet",
      CONCLAVE_NATS_TLS_CA: pki.ca,
      CONCLAVE_NATS_TLS_CERT: pki.clientCert,
      CONCLAVE_NATS_TLS_KEY: pki.clientKey,
      // One environment for every child: each role finds its own seed file.
      CONCLAVE_NATS_RUNNER_NKEY_SEED_FILE: keys.runner!.seedFile,
      CONCLAVE_NATS_WORKER_NKEY_SEED_FILE: keys.worker!.seedFile,
      CONCLAVE_NATS_OBSERVER_NKEY_SEED_FILE: keys.observer!.seedFile,
    },
  });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a stack on TLS and nkeys (deploy/nats.production.conf)", () => {
  it("runs a turn a client submits over TLS with its nkey", async () => {
    const nc = await connectBus(busOptions("client", {}, clientEnv(keys.client!.seedFile)));
    try {
      expect(nc.info?.tls_required).toBe(true);
      const ack = await submitTurn(nc, "tls-e2e", { text: "I'm feeling stressed about my deadline" });
      const events: EngineEvent[] = [];
      await watchTurn(nc, ack, (event) => events.push(event), 30_000);
      const completed = events.at(-1);
      expect(completed?.kind).toBe("TURN_COMPLETED");
      if (completed?.kind === "TURN_COMPLETED") expect(completed.payload.outcome).toEqual({ status: "Complete" });
    } finally {
      await nc.close();
    }
  });

  it("gave no process a secret in its argv, nor in its environment: only the files' names", () => {
    const secrets = [...Object.values(keys).map((key) => key.seed), readFileSync(pki.clientKey, "utf8").trim()];
    expect(cluster!.processes).toHaveLength(4);
    for (const p of cluster!.processes) {
      const pid = p.current.child.pid!;
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      for (const secret of secrets) {
        expect(argv).not.toContain(secret);
        expect(environ).not.toContain(secret);
      }
      expect(argv).not.toMatch(/--password|--user/);
      expect(environ).toContain(`CONCLAVE_NATS_RUNNER_NKEY_SEED_FILE=${keys.runner!.seedFile}`);
    }
  });

  it("refuses a plaintext connection: past its INFO (tls_required) the server closes the socket", async () => {
    const socket = tcpConnect(server!.port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString();
      if (received.includes("\r\n") && !received.includes("-ERR")) {
        socket.write('CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n');
      }
    });
    await new Promise<void>((closed) => socket.once("close", () => closed()));
    // The CONNECT and PING in clear text are taken for a bad TLS handshake: no PONG, no +OK, closed.
    const [info, ...rest] = received.split("\r\n");
    expect(info).toMatch(/^INFO .*"tls_required":true/);
    expect(rest.join("")).toBe("");
  });

  it("refuses a client without a certificate, and a key it does not know", async () => {
    const noCertificate = {
      ...clientEnv(keys.client!.seedFile),
      CONCLAVE_NATS_TLS_CERT: "",
      CONCLAVE_NATS_TLS_KEY: "",
    };
    const failure = await connectBus(busOptions("client", {}, noCertificate)).then(
      (nc) => nc.close(),
      (error: unknown) => error,
    );
    // TLS 1.3 rejects the missing certificate after the handshake: the client sees the socket
    // close before the server's first PONG, until its timeout. With the certificate, it connects (above).
    expect(failure).toBeInstanceOf(Error);
    const stranger = makeUserNkey(dir, "stranger");
    await expect(connectBus(busOptions("client", {}, clientEnv(stranger.seedFile)))).rejects.toBeInstanceOf(
      AuthorizationError,
    );
  });

  it("gives each role only its permissions: the observer cannot submit a turn", async () => {
    const nc = await connectBus(busOptions("observer", {}, clientEnv(keys.observer!.seedFile)));
    try {
      const refused = new Promise<unknown>((resolve) => {
        void (async () => {
          for await (const status of nc.status()) if (status.type === "error") resolve(status.error);
        })();
      });
      nc.publish("conclave.turn.submit.tls-e2e", JSON.stringify({ text: "not allowed" }));
      expect(String(await refused)).toMatch(/Permissions Violation for Publish to "conclave\.turn\.submit/);
    } finally {
      await nc.close();
    }
  });
});

describe("TLS on the client side", () => {
  it("a Conclave process told to use TLS refuses a server without it", async () => {
    const plain = await startNatsServer();
    try {
      const env = { CONCLAVE_NATS_URL: plain.url.replace(/^nats:/, "tls:") };
      await expect(connectBus(busOptions("client", {}, env))).rejects.toThrow(/tls/i);
      // The same server, the same credentials, without tls://: it connects.
      const nc = await connectBus(busOptions("client", { servers: plain.url }, {}));
      await nc.close();
    } finally {
      await plain.stop();
    }
  });
});

describe("conclave up in production", () => {
  it("does not start the development nats-server when none answers", async () => {
    const url = `tls://127.0.0.1:${await freePort()}`;
    const env = { ...clientEnv(keys.observer!.seedFile), CONCLAVE_NATS_URL: url };
    await expect(startLocalCluster({ url, dataDir: join(dir, "unused"), log: () => {}, env })).rejects.toThrow(
      /CONCLAVE_ENV=production: no NATS server answers at .*; conclave up starts one only in development/,
    );
  });
});

describe("CONCLAVE_ENV", () => {
  it("an unknown value fails the command with one line naming the accepted values", async () => {
    const result = await run(process.execPath, [CONCLAVE_BIN, "send", "--session", "s", "hello"], {
      env: { ...process.env, CONCLAVE_ENV: "prod", CONCLAVE_NATS_URL: server!.url },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (failure: { code: number; stderr: string }) => failure,
    );
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(
      /CONCLAVE_ENV="prod" is invalid: not a known environment; use one of development, production/,
    );
  });
});

describe("deploy/nats.production.conf", () => {
  it("has the accounts, roles and permissions of nats.conf, with an nkey for each user instead of a password", () => {
    const normalised = (conf: string) =>
      conf.slice(conf.indexOf("\naccounts {")).replace(/#.*$/gm, "").replace(/\s+/g, " ").trim();
    const dev = readFileSync(join(REPO_ROOT, "nats.conf"), "utf8").replace(
      /user: (\w+), password: "[^"]*"/g,
      (_, user: string) => `nkey: $CONCLAVE_NKEY_${user.toUpperCase()}`,
    );
    expect(normalised(readFileSync(PRODUCTION_CONF, "utf8"))).toBe(normalised(dev));
  });
});

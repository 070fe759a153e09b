import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthorizationError } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { makeOperatorSetup } from "../helpers/jwt.ts";

/** A server in operator (JWT) mode, where users log in with `.creds` files, as `nsc` makes them. */
let dir = "";
let server: RunningNatsServer | undefined;
let setup: ReturnType<typeof makeOperatorSetup>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "conclave-creds-"));
  setup = makeOperatorSetup(dir);
  server = await startNatsServer({ config: setup.config, storeDir: join(dir, "store") });
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a .creds file (CONCLAVE_NATS_CREDS_FILE)", () => {
  it("logs a Conclave process in, in production, with nothing else given", async () => {
    const env = {
      CONCLAVE_ENV: "production",
      CONCLAVE_NATS_URL: server!.url,
      CONCLAVE_NATS_RUNNER_CREDS_FILE: setup.credsFile,
    };
    const nc = await connectBus(busOptions("runner", {}, env));
    try {
      const sub = nc.subscribe("conclave.creds.echo", {
        callback: (_, msg) => {
          msg.respond(msg.data);
        },
      });
      const reply = await nc.request("conclave.creds.echo", "over creds", { timeout: 2_000 });
      expect(reply.string()).toBe("over creds");
      sub.unsubscribe();
    } finally {
      await nc.close();
    }
  });

  it("is refused by the server without it: the development password means nothing here", async () => {
    await expect(connectBus(busOptions("runner", { servers: server!.url }, {}))).rejects.toBeInstanceOf(
      AuthorizationError,
    );
  });

  it("is checked before connecting: a file that is not a creds file is a config error that quotes nothing", () => {
    // The operator's config: a JWT, but no user JWT and seed.
    const attempt = () => busOptions("runner", {}, { CONCLAVE_NATS_CREDS_FILE: setup.config });
    expect(attempt).toThrow(/does not hold a user JWT and seed/);
    expect(attempt).not.toThrow(readFileSync(setup.config, "utf8").split("\n")[0]!.slice(10, 40));
  });
});

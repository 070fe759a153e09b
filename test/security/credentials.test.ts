import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { AuthorizationError } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  busOptions,
  connectBus,
  DEV_CREDENTIALS,
  INBOX_PREFIXES,
  InsecureCredentialsError,
  isProduction,
  ROLES,
} from "../../src/bus/connection.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { DEFAULT_NATS_CONFIG, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";

const run = promisify(execFile);
const PRODUCTION = { CONCLAVE_ENV: "production" };
const OWN = { CONCLAVE_NATS_USER: "runner", CONCLAVE_NATS_PASSWORD: "a-long-random-secret-of-our-own" };

describe("busOptions in development", () => {
  it.each(ROLES)("gives the %s role its development user, password and inbox prefix", (role) => {
    expect(busOptions(role, {}, {})).toMatchObject({
      servers: ["nats://127.0.0.1:4222"],
      user: DEV_CREDENTIALS[role].user,
      password: DEV_CREDENTIALS[role].password,
      inboxPrefix: INBOX_PREFIXES[role],
      persistent: false,
    });
  });

  it("takes flags over the environment over the defaults", () => {
    const env = {
      CONCLAVE_NATS_URL: "nats://env:4222",
      CONCLAVE_NATS_USER: "env-user",
      CONCLAVE_NATS_PASSWORD: "env-pass",
    };
    expect(busOptions("client", {}, env)).toMatchObject({
      servers: ["nats://env:4222"],
      user: "env-user",
      password: "env-pass",
    });
    expect(busOptions("client", { user: "flag-user", password: "flag-pass" }, env)).toMatchObject({
      user: "flag-user",
      password: "flag-pass",
    });
  });
});

describe("busOptions in production (CONCLAVE_ENV=production)", () => {
  it("recognises production in any case", () => {
    expect(isProduction({ CONCLAVE_ENV: "Production " })).toBe(true);
    expect(isProduction({ CONCLAVE_ENV: "development" })).toBe(false);
    expect(isProduction({})).toBe(false);
  });

  it.each(ROLES)("refuses to fall back on the %s role's development credentials", (role) => {
    expect(() => busOptions(role, {}, PRODUCTION)).toThrow(InsecureCredentialsError);
    expect(() => busOptions(role, {}, PRODUCTION)).toThrow(/CONCLAVE_NATS_USER.*CONCLAVE_NATS_PASSWORD/);
  });

  it("refuses a user without a password, and empty values", () => {
    expect(() => busOptions("runner", {}, { ...PRODUCTION, CONCLAVE_NATS_USER: "runner" })).toThrow(/password/);
    expect(() =>
      busOptions("runner", {}, { ...PRODUCTION, CONCLAVE_NATS_USER: "", CONCLAVE_NATS_PASSWORD: "" }),
    ).toThrow(InsecureCredentialsError);
  });

  it.each(ROLES)("refuses the development password of %s, whoever it is given for", (owner) => {
    for (const role of ROLES) {
      const env = {
        ...PRODUCTION,
        CONCLAVE_NATS_USER: "someone",
        CONCLAVE_NATS_PASSWORD: DEV_CREDENTIALS[owner].password,
      };
      expect(() => busOptions(role, {}, env)).toThrow(InsecureCredentialsError);
      expect(() =>
        busOptions(role, { user: "someone", password: DEV_CREDENTIALS[owner].password }, PRODUCTION),
      ).toThrow(/development default/);
    }
  });

  it("accepts explicit credentials from the environment or from flags", () => {
    expect(busOptions("runner", {}, { ...PRODUCTION, ...OWN })).toMatchObject({
      user: OWN.CONCLAVE_NATS_USER,
      password: OWN.CONCLAVE_NATS_PASSWORD,
      inboxPrefix: INBOX_PREFIXES.runner,
    });
    expect(busOptions("worker", { user: "w-7", password: "flag-secret" }, PRODUCTION)).toMatchObject({
      user: "w-7",
      password: "flag-secret",
      inboxPrefix: INBOX_PREFIXES.worker,
    });
  });
});

describe("a production deployment", () => {
  // The repo's nats.conf with every password replaced: what an operator runs.
  let dir = "";
  let server: RunningNatsServer | undefined;
  const secrets = Object.fromEntries(
    ROLES.map((role) => [role, `${role}-${Math.random().toString(36).slice(2)}-secret`]),
  );
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "conclave-prod-conf-"));
    let config = readFileSync(DEFAULT_NATS_CONFIG, "utf8");
    for (const role of ROLES) config = config.replaceAll(`"${DEV_CREDENTIALS[role].password}"`, `"${secrets[role]}"`);
    writeFileSync(join(dir, "nats.conf"), config);
    server = await startNatsServer({ config: join(dir, "nats.conf") });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("connects each role with its own credentials, with the role's permissions", async () => {
    for (const role of ROLES) {
      const env = {
        ...PRODUCTION,
        CONCLAVE_NATS_URL: server!.url,
        CONCLAVE_NATS_USER: role,
        CONCLAVE_NATS_PASSWORD: secrets[role],
      };
      const nc = await connectBus(busOptions(role, {}, env));
      try {
        // A request answered on the role's own inbox.
        expect((await nc.request("$JS.API.INFO", "", { timeout: 2_000 })).json()).toHaveProperty("type");
      } finally {
        await nc.close();
      }
    }
  });

  it("refuses the development passwords at the server too", async () => {
    const error = await connectBus(busOptions("client", { servers: server!.url }, {})).then(
      async (nc) => {
        await nc.close();
        return null;
      },
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(AuthorizationError);
  });

  it("the CLI says so clearly and exits 2 when given the development defaults", async () => {
    const result = await run(process.execPath, [CONCLAVE_BIN, "send", "--session", "prod", "hello"], {
      env: {
        ...process.env,
        ...PRODUCTION,
        CONCLAVE_NATS_URL: server!.url,
        CONCLAVE_NATS_USER: "",
        CONCLAVE_NATS_PASSWORD: "",
      },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (failure: { code: number; stderr: string }) => failure,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^conclave send: CONCLAVE_ENV=production: no NATS user/);
    expect(result.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace

    const devPassword = await run(
      process.execPath,
      [
        CONCLAVE_BIN,
        "events",
        "--session",
        "prod",
        "--user",
        "observer",
        "--password",
        DEV_CREDENTIALS.observer.password,
      ],
      { env: { ...process.env, ...PRODUCTION, CONCLAVE_NATS_URL: server!.url } },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (failure: { code: number; stderr: string }) => failure,
    );
    expect(devPassword.code).toBe(2);
    expect(devPassword.stderr).toMatch(/development default/);
  });
});

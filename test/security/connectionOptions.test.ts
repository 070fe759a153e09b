import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import {
  BusConfigError,
  busOptions,
  conclaveEnv,
  InsecureCredentialsError,
  isProduction,
} from "../../src/bus/connection.ts";
import { connectionFrom, PASSWORD_FLAG_WARNING } from "../../src/cli/args.ts";
import { isConclaveError } from "../../src/errors.ts";
import { makeUserNkey } from "../helpers/tls.ts";

const dir = mkdtempSync(join(tmpdir(), "conclave-conn-options-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};
const PRODUCTION = { CONCLAVE_ENV: "production" };
const seed = makeUserNkey(dir, "unit");

describe("CONCLAVE_ENV", () => {
  it("is development when unset or empty, and production or development in any case", () => {
    expect(conclaveEnv({})).toBe("development");
    expect(conclaveEnv({ CONCLAVE_ENV: " " })).toBe("development");
    expect(conclaveEnv({ CONCLAVE_ENV: "PRODUCTION" })).toBe("production");
    expect(conclaveEnv({ CONCLAVE_ENV: "Development" })).toBe("development");
  });

  it.each(["prod", "production2", "dev", "staging"])("refuses %s, naming the accepted values", (value) => {
    const attempt = () => busOptions("client", {}, { CONCLAVE_ENV: value });
    expect(attempt).toThrow(BusConfigError);
    expect(attempt).toThrow(
      `CONCLAVE_ENV="${value}" is invalid: not a known environment; use one of development, production`,
    );
    expect(() => isProduction({ CONCLAVE_ENV: value })).toThrow(BusConfigError);
  });

  it("keeps the message on one line whatever the value holds", () => {
    const error = (() => {
      try {
        conclaveEnv({ CONCLAVE_ENV: "prod\nuction" });
      } catch (failure) {
        return failure;
      }
    })();
    expect(isConclaveError(error, "config")).toBe(true);
    expect((error as Error).message).not.toContain("\n");
  });
});

describe("secrets from files and per role", () => {
  it("reads the password from CONCLAVE_NATS_PASSWORD_FILE, without its newline", () => {
    const env = { CONCLAVE_NATS_USER: "runner", CONCLAVE_NATS_PASSWORD_FILE: file("pw", "s3cret with space\n") };
    expect(busOptions("runner", {}, env)).toMatchObject({ user: "runner", password: "s3cret with space" });
  });

  it("refuses both a password and a password file, an unreadable file and an empty one", () => {
    const both = { CONCLAVE_NATS_PASSWORD: "a", CONCLAVE_NATS_PASSWORD_FILE: file("pw2", "b") };
    expect(() => busOptions("client", {}, both)).toThrow(/both CONCLAVE_NATS_PASSWORD and CONCLAVE_NATS_PASSWORD_FILE/);
    const missing = { CONCLAVE_NATS_PASSWORD_FILE: join(dir, "absent") };
    expect(() => busOptions("client", {}, missing)).toThrow(BusConfigError);
    expect(() => busOptions("client", {}, { CONCLAVE_NATS_PASSWORD_FILE: file("empty", "\n") })).toThrow(/is empty/);
  });

  it("takes CONCLAVE_NATS_<ROLE>_* over CONCLAVE_NATS_*, so one environment serves every role", () => {
    const env = {
      CONCLAVE_NATS_USER: "shared",
      CONCLAVE_NATS_PASSWORD: "shared-secret",
      CONCLAVE_NATS_RUNNER_USER: "runner-7",
      CONCLAVE_NATS_RUNNER_PASSWORD: "runner-secret",
    };
    expect(busOptions("runner", {}, env)).toMatchObject({ user: "runner-7", password: "runner-secret" });
    expect(busOptions("worker", {}, env)).toMatchObject({ user: "shared", password: "shared-secret" });
  });

  it("logs in with an nkey seed file, with no user or password", () => {
    const options = busOptions("worker", {}, { ...PRODUCTION, CONCLAVE_NATS_WORKER_NKEY_SEED_FILE: seed.seedFile });
    expect(options.nkeySeedFile).toBe(seed.seedFile);
    expect(options).not.toHaveProperty("user");
    expect(options).not.toHaveProperty("password");
  });

  it("refuses a seed file that holds no user seed, without quoting it", () => {
    const bad = file("bad.nk", "SOMETHING-SECRET-BUT-WRONG\n");
    const attempt = () => busOptions("worker", {}, { CONCLAVE_NATS_NKEY_SEED_FILE: bad });
    expect(attempt).toThrow(/does not hold a user nkey seed/);
    expect(attempt).not.toThrow(/SOMETHING-SECRET/);
  });

  it("logs in with a creds file", () => {
    const creds = file(
      "user.creds",
      "-----BEGIN NATS USER JWT-----\nx\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\nSUx\n------END USER NKEY SEED------\n",
    );
    expect(busOptions("client", {}, { ...PRODUCTION, CONCLAVE_NATS_CREDS_FILE: creds })).toMatchObject({
      credsFile: creds,
    });
  });

  it("refuses two ways to log in at once", () => {
    const env = { CONCLAVE_NATS_USER: "u", CONCLAVE_NATS_NKEY_SEED_FILE: seed.seedFile };
    expect(() => busOptions("client", {}, env)).toThrow(/a user and password and an nkey seed file; give only one/);
  });
});

describe("TLS", () => {
  it("is not asked for by default: nats:// and no files", () => {
    expect(busOptions("client", {}, {})).not.toHaveProperty("tls");
  });

  it("is required by a tls:// URL, with no files: the system's CAs", () => {
    expect(busOptions("client", {}, { CONCLAVE_NATS_URL: "tls://nats.example:4222" }).tls).toEqual({});
  });

  it("is required by a CA, certificate or key file, and takes all three", () => {
    const env = {
      CONCLAVE_NATS_TLS_CA: "/etc/conclave/ca.pem",
      CONCLAVE_NATS_TLS_CERT: "/etc/conclave/client.pem",
      CONCLAVE_NATS_TLS_KEY: "/etc/conclave/client.key",
    };
    expect(busOptions("runner", {}, env).tls).toEqual({
      caFile: "/etc/conclave/ca.pem",
      certFile: "/etc/conclave/client.pem",
      keyFile: "/etc/conclave/client.key",
    });
  });

  it("refuses a certificate without its key", () => {
    expect(() => busOptions("runner", {}, { CONCLAVE_NATS_TLS_CERT: "/c.pem" })).toThrow(/both CONCLAVE_NATS_TLS_CERT/);
  });
});

describe("production transport", () => {
  const own = { ...PRODUCTION, CONCLAVE_NATS_NKEY_SEED_FILE: seed.seedFile };

  it.each(["nats://10.0.0.5:4222", "nats://nats.example:4222", "127.0.0.1:4222,nats://10.0.0.5:4222"])(
    "refuses %s in clear text",
    (url) => {
      expect(() => busOptions("runner", { servers: url }, own)).toThrow(InsecureCredentialsError);
      expect(() => busOptions("runner", { servers: url }, own)).toThrow(/is neither TLS nor loopback/);
    },
  );

  it.each(["nats://127.0.0.1:4222", "nats://localhost:4222", "nats://[::1]:4222", "127.0.0.2:4222"])(
    "accepts loopback %s in clear text",
    (url) => {
      expect(busOptions("runner", { servers: url }, own).servers).toEqual([url]);
    },
  );

  it("accepts a remote server over TLS", () => {
    expect(busOptions("runner", { servers: "tls://10.0.0.5:4222" }, own).tls).toEqual({});
    expect(
      busOptions("runner", { servers: "nats://10.0.0.5:4222" }, { ...own, CONCLAVE_NATS_TLS_CA: "/ca.pem" }).tls,
    ).toEqual({
      caFile: "/ca.pem",
    });
  });

  it("refuses the development passwords, from a file too, and the operator's", () => {
    for (const password of ["conclave-dev-runner", "conclave-dev-operator"]) {
      const env = { ...PRODUCTION, CONCLAVE_NATS_USER: "runner", CONCLAVE_NATS_PASSWORD_FILE: file("dev", password) };
      expect(() => busOptions("runner", {}, env)).toThrow(/development default/);
    }
  });
});

describe("given in code (connect, startRunner and startWorker take the same names)", () => {
  it("takes servers as a list or comma-separated, else the environment's", () => {
    const listed = busOptions("client", { servers: ["nats://a:4222", "nats://b:4222, nats://c:4222"] }, {});
    expect(listed.servers).toEqual(["nats://a:4222", "nats://b:4222", "nats://c:4222"]);
    expect(busOptions("client", { servers: "nats://a:4222,nats://b:4222" }, {}).servers).toEqual([
      "nats://a:4222",
      "nats://b:4222",
    ]);
    const env = { CONCLAVE_NATS_URL: "nats://env:4222" };
    expect(busOptions("client", { servers: [] }, env).servers).toEqual(["nats://env:4222"]);
    expect(busOptions("client", {}, {}).servers).toEqual(["nats://127.0.0.1:4222"]);
  });

  it("refuses the old name `url` rather than quietly connecting elsewhere", () => {
    const attempt = () => busOptions("client", { url: "nats://a:4222" } as never, {});
    expect(attempt).toThrow(BusConfigError);
    expect(attempt).toThrow(/`url` is now `servers`/);
  });

  it("uses TLS files given over the environment's, checked the same way", () => {
    const env = { CONCLAVE_NATS_TLS_CA: "/env-ca.pem" };
    expect(busOptions("runner", { tls: { caFile: "/ca.pem" } }, env).tls).toEqual({ caFile: "/ca.pem" });
    expect(busOptions("runner", { tls: {} }, {}).tls).toEqual({});
    expect(() => busOptions("runner", { tls: { certFile: "/c.pem" } }, {})).toThrow(/tls\.certFile and tls\.keyFile/);
  });

  it("takes an nkey seed file or a creds file, as the environment gives them", () => {
    expect(busOptions("worker", { nkeySeedFile: seed.seedFile }, PRODUCTION)).toMatchObject({
      nkeySeedFile: seed.seedFile,
    });
    expect(() => busOptions("worker", { credsFile: file("bad.creds", "nothing") }, {})).toThrow(
      /does not hold a user JWT and seed/,
    );
  });
});

describe("--password", () => {
  afterEach(() => vi.restoreAllMocks());

  it("still works, and warns that it is visible in ps", () => {
    const write = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(connectionFrom({ user: "u", password: "p" }, "client", false)).toMatchObject({ password: "p" });
    expect(write).toHaveBeenCalledWith(`${PASSWORD_FLAG_WARNING}\n`);
    expect(PASSWORD_FLAG_WARNING).toMatch(/CONCLAVE_NATS_PASSWORD_FILE/);
  });

  it("says nothing without it", () => {
    const write = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    connectionFrom({}, "client", false);
    expect(write).not.toHaveBeenCalled();
  });
});

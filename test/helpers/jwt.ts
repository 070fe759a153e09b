import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { nkeys } from "@nats-io/nats-core";

/**
 * Just enough of NATS's decentralised auth (operator → account → user JWTs,
 * ed25519-nkey signatures) for a test server in operator mode: what `nsc`
 * would write, made at test time with the nkeys library.
 */
type KeyPair = ReturnType<typeof nkeys.createOperator>;

const base64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64url");

/** A unique id for the claims (the JWT library uses their base32 SHA-256; nats-server only needs it present). */
const jti = (claims: object): string => createHash("sha256").update(JSON.stringify(claims)).digest("hex").toUpperCase();

function encode(issuer: KeyPair, subject: string, name: string, nats: object): string {
  const body = { iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub: subject, nats };
  const claims = { jti: jti(body), ...body };
  const signed = `${base64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }))}.${base64url(JSON.stringify(claims))}`;
  return `${signed}.${base64url(issuer.sign(new TextEncoder().encode(signed)))}`;
}

const UNLIMITED = { subs: -1, data: -1, payload: -1 };

/**
 * An operator-mode nats-server config (memory resolver) with one account, and
 * a `.creds` file for one user of it, written into `dir`.
 */
export function makeOperatorSetup(dir: string): { config: string; credsFile: string; userSeed: string } {
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  const user = nkeys.createUser();
  const operatorJwt = encode(operator, operator.getPublicKey(), "conclave-test-operator", {
    type: "operator",
    version: 2,
  });
  const accountJwt = encode(operator, account.getPublicKey(), "CONCLAVE", {
    limits: { ...UNLIMITED, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 },
    default_permissions: { pub: {}, sub: {} },
    type: "account",
    version: 2,
  });
  const userJwt = encode(account, user.getPublicKey(), "conclave-runner", {
    pub: {},
    sub: {},
    ...UNLIMITED,
    type: "user",
    version: 2,
  });
  const userSeed = new TextDecoder().decode(user.getSeed());
  const credsFile = join(dir, "runner.creds");
  writeFileSync(
    credsFile,
    `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n` +
      `-----BEGIN USER NKEY SEED-----\n${userSeed}\n------END USER NKEY SEED------\n`,
    { mode: 0o600 },
  );
  const config = join(dir, "operator.conf");
  writeFileSync(
    config,
    `operator: ${operatorJwt}\nresolver: MEMORY\nresolver_preload: {\n  ${account.getPublicKey()}: ${accountJwt}\n}\n`,
  );
  return { config, credsFile, userSeed };
}

import { execFile } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { nkeys } from "@nats-io/nats-core";

const run = promisify(execFile);

/** PEM files of a throwaway CA and the certificates it signed, all in one directory. */
export interface TestPki {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

const openssl = (dir: string, args: string[]) => run("openssl", args, { cwd: dir });

/** A P-256 key and a certificate for `cn` signed by the CA in `dir`, with the given extensions. */
async function issue(dir: string, name: string, cn: string, extensions: string): Promise<void> {
  await openssl(dir, [
    ...["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
    ...["-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${cn}`],
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  await openssl(dir, [
    ...["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"],
    ...["-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`],
  ]);
  chmodSync(join(dir, `${name}.key`), 0o600);
}

/**
 * Generates, with openssl, a CA valid for a day, a server certificate for
 * 127.0.0.1 and localhost, and a client certificate, into `dir` (a temporary
 * directory the caller removes). Nothing here is ever committed.
 */
export async function makeTestPki(dir: string): Promise<TestPki> {
  await openssl(dir, [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
    ...["-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=conclave-test-ca"],
    ...["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
  ]);
  chmodSync(join(dir, "ca.key"), 0o600);
  await issue(
    dir,
    "server",
    "127.0.0.1",
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n",
  );
  await issue(
    dir,
    "client",
    "conclave-test-client",
    "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n",
  );
  return {
    ca: join(dir, "ca.pem"),
    serverCert: join(dir, "server.pem"),
    serverKey: join(dir, "server.key"),
    clientCert: join(dir, "client.pem"),
    clientKey: join(dir, "client.key"),
  };
}

/** A new user nkey: its public key (U…), its seed (SU…), and the seed written to `<dir>/<name>.nk` (mode 600). */
export function makeUserNkey(dir: string, name: string): { publicKey: string; seed: string; seedFile: string } {
  const pair = nkeys.createUser();
  const seed = new TextDecoder().decode(pair.getSeed());
  const seedFile = join(dir, `${name}.nk`);
  writeFileSync(seedFile, `${seed}\n`, { mode: 0o600 });
  return { publicKey: pair.getPublicKey(), seed, seedFile };
}

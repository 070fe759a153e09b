#!/usr/bin/env node
// Makes a user nkey for one Conclave role: writes its seed to <path>.nk (mode 600,
// for the process that logs in with it: CONCLAVE_NATS_<ROLE>_NKEY_SEED_FILE) and its
// public key to <path>.pub (for nats-server: CONCLAVE_NKEY_<ROLE>), and prints the
// public key. Usage: node deploy/make-nkey.mjs /etc/conclave/runner
import { writeFileSync } from "node:fs";
import { nkeys } from "@nats-io/nats-core";

const path = process.argv[2];
if (!path) {
  console.error("usage: node deploy/make-nkey.mjs <path without extension>, e.g. /etc/conclave/runner");
  process.exit(2);
}
const pair = nkeys.createUser();
try {
  // "wx": never overwrite a seed in use.
  writeFileSync(`${path}.nk`, `${new TextDecoder().decode(pair.getSeed())}\n`, { mode: 0o600, flag: "wx" });
  writeFileSync(`${path}.pub`, `${pair.getPublicKey()}\n`, { flag: "wx" });
} catch (error) {
  console.error(`make-nkey: ${error.message}`);
  process.exit(1);
}
console.log(pair.getPublicKey());

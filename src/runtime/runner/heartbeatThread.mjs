// @ts-check
/**
 * A runner's liveness heartbeat, on a thread of its own with a NATS connection of its own
 * (`liveness.ts` starts it). On the runner's event loop, a burst of turns delayed heartbeats past
 * the lease (1.5 s): the runner saw its own lease lapse and took its own turns over until they
 * were poison. Here nothing but the heartbeat runs, so the lease lapses only when NATS is out of
 * reach or the runner's event loop stops answering this thread for `watchdogMs` (a hung process
 * must lose its sessions, so survivors take them).
 *
 * Plain JavaScript so it loads as a worker from the sources (vitest, tsx) and from dist/ alike.
 *
 * Messages from the runner: "tick" (its event loop still turns) and "stop". To the runner:
 * { type: "stored" } once per lease held, { type: "lapsed", why } when it is lost, { type: "closed" }.
 */
import { readFileSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import { Kvm } from "@nats-io/kv";
import { credsAuthenticator, nkeyAuthenticator } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";

/**
 * @typedef {object} HeartbeatSetup
 * @property {{ servers: string[], user?: string, password?: string, credsFile?: string,
 *   nkeySeedFile?: string, tls?: { caFile?: string, certFile?: string, keyFile?: string },
 *   name: string, inboxPrefix: string }} connection
 * @property {string} bucket
 * @property {string} key
 * @property {string} runner
 * @property {number} ttlMs
 * @property {number} everyMs
 * @property {number} watchdogMs
 * @property {number} format the stored format version each heartbeat carries as `v`
 */

const setup = /** @type {HeartbeatSetup} */ (workerData);
const port = parentPort;
if (!port) throw new Error("heartbeatThread.mjs runs as a worker thread");

const trimmed = (/** @type {string} */ path) => new TextEncoder().encode(readFileSync(path, "utf8").trim());
const { connection } = setup;
const authenticator = connection.credsFile
  ? credsAuthenticator(new TextEncoder().encode(`${readFileSync(connection.credsFile, "utf8").trimEnd()}\n`))
  : connection.nkeySeedFile
    ? nkeyAuthenticator(trimmed(connection.nkeySeedFile))
    : undefined;

const nc = await connect({
  servers: connection.servers,
  ...(authenticator ? { authenticator } : { user: connection.user, pass: connection.password }),
  ...(connection.tls ? { tls: connection.tls } : {}),
  name: `${connection.name}:heartbeat`,
  inboxPrefix: connection.inboxPrefix,
  maxReconnectAttempts: -1,
  waitOnFirstConnect: true,
  reconnectTimeWait: 250,
  noAsyncTraces: true,
  // As the runner's own connection (PERSISTENT_PING_MS): a link gone silent (a partition) is given up after
  // two missed pings and another server is tried; the library's 2 min × 2 kept the lease lapsed for minutes.
  pingInterval: 5_000,
  maxPingOut: 2,
});

let kv = await new Kvm(nc).open(setup.bucket);
/** @type {number | undefined} the revision of the last stored heartbeat: the next is written only over it */
let revision;
let lastStored = 0;
let lastTick = Date.now();
let held = false;
let beating = false;
let reopen = false;

const say = (/** @type {object} */ message) => port.postMessage(message);
const lapse = (/** @type {string} */ why) => {
  revision = undefined;
  if (!held) return;
  held = false;
  say({ type: "lapsed", why });
};

async function beat() {
  if (beating) return; // one in flight at a time
  const sentAt = Date.now();
  if (sentAt - lastTick > setup.watchdogMs) {
    // The runner's event loop has not answered for watchdogMs: let the lease go, so survivors take its sessions.
    lapse(`the runner's event loop did not answer for ${sentAt - lastTick} ms`);
    return;
  }
  beating = true;
  try {
    if (reopen) {
      kv = await new Kvm(nc).open(setup.bucket);
      reopen = false;
    }
    const value = JSON.stringify({ v: setup.format, runner: setup.runner, at: sentAt });
    revision = revision === undefined ? await kv.put(setup.key, value) : await kv.update(setup.key, value, revision);
    lastStored = sentAt;
    if (!held) {
      held = true;
      say({ type: "stored" });
    }
  } catch (error) {
    const message = String(/** @type {Error} */ (error)?.message);
    // The key expired since the last heartbeat (compare-and-set failed): the lease lapsed, proven.
    if (/wrong last sequence|key exists/i.test(message)) lapse("the lease expired before a heartbeat was stored");
    else if (Date.now() - lastStored >= setup.ttlMs) lapse(`no heartbeat stored for ${setup.ttlMs} ms: ${message}`);
    if (/no responders|stream not found/i.test(message)) reopen = true;
  } finally {
    beating = false;
  }
}

const timer = setInterval(() => void beat(), setup.everyMs);
port.on("message", async (message) => {
  if (message === "tick") {
    lastTick = Date.now();
    return;
  }
  if (message !== "stop") return;
  clearInterval(timer);
  await kv.delete(setup.key).catch(() => {});
  await nc.drain().catch(() => {});
  say({ type: "closed" });
  port.close();
});
await beat();

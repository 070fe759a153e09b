import { Worker } from "node:worker_threads";
import type { KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection, QueuedIterator } from "@nats-io/nats-core";
import { z } from "zod";
import { encodeRecord } from "../../bus/codec.ts";
import { type BusOptions, serverUrls } from "../../bus/connection.ts";
import { isConflict, JsonKv } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import { FORMAT_VERSION } from "../../contracts/format.ts";
import { isConclaveError, messageOf } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";

/** How long a runner's liveness lease lives without a heartbeat: a runner silent this long is dead. */
export const LIVENESS_TTL_MS = 1_500;
/** How often a runner renews its liveness lease: three chances before it lapses. */
export const HEARTBEAT_EVERY_MS = 500;
/**
 * How long past its lease's end a runner waits for a heartbeat to say whether the lease really lapsed (its key
 * gone) before it lets its sessions go anyway: long enough for one round trip after a stall of the process.
 */
const SUSPECT_GRACE_MS = 250;
/**
 * With the heartbeat on its own thread: how long the runner's event loop may stop answering that thread
 * before the lease is let go (a hung process must lose its sessions). A burst that only slows the loop
 * keeps it: the stalls seen under a 2000-session burst were seconds, not tens of seconds.
 */
export const EVENT_LOOP_WATCHDOG_MS = 10_000;
/** How long the heartbeat thread may take to store its first heartbeat. */
const THREAD_START_MS = 15_000;

const Heartbeat = z.object({ runner: z.string().min(1), at: z.number() });

/** A runner's key in `conclave_runners`: its name in base64url (names such as `host:pid` are no valid KV keys). */
export const runnerKey = (runner: string): string => Buffer.from(runner).toString("base64url");
const runnerOfKey = (key: string): string => Buffer.from(key, "base64url").toString();

/** What a runner hears about its own lease. */
export interface LivenessEvents {
  /** Its lease lapsed (no heartbeat stored for LIVENESS_TTL_MS: cut off from NATS, or stalled): others may take its sessions. */
  onLapsed?: () => void;
  /** A heartbeat was stored again after a lapse. */
  onRestored?: () => void;
  /** A runner joined or left (`members` changed). */
  onMembersChanged?: () => void;
}

/** How long opening waits for the watch to have read the runners already alive. */
const FIRST_ROLL_CALL_MS = 2_000;

/** What a heartbeat thread says to the runner (`heartbeatThread.mjs`). */
type ThreadMessage = { type: "stored" } | { type: "lapsed"; why: string } | { type: "closed" };

/** How a runner's heartbeat connects from its own thread: the runner's own connection settings. */
export type HeartbeatConnection = Pick<
  BusOptions,
  "servers" | "user" | "password" | "credsFile" | "nkeySeedFile" | "tls" | "name" | "inboxPrefix"
>;

/**
 * One liveness lease per runner: a key of the `conclave_runners` bucket (its
 * entries expire LIVENESS_TTL_MS after they are written) renewed every
 * HEARTBEAT_EVERY_MS, whatever the number of sessions the runner hosts. Every
 * runner watches the bucket, so it knows which runners live without a read
 * per turn; a runner whose heartbeats stop being stored counts its own lease
 * as lapsed from the time it sent its last stored one (never later than the
 * server expires it) and says so (`onLapsed`).
 */
export class RunnerLiveness {
  /** Other runners, by name: when their last heartbeat reached this one (local clock). */
  readonly #seen = new Map<string, number>();
  /** This runner's lease is alive until then: the sending time of its last stored heartbeat, plus the TTL. */
  #aliveUntil = 0;
  /** The revision of this runner's last stored heartbeat: the next one is written only over it (compare-and-set). */
  #revision: number | undefined;
  /** When the clock passed `#aliveUntil` with no heartbeat to prove the lease lost (a stall of this process, say). */
  #suspectSince: number | undefined;
  #lapsed = false;
  #beating = false;
  #reopen = false;
  #timer: NodeJS.Timeout | undefined;
  #watch: QueuedIterator<KvWatchEntry> | null = null;
  /** The heartbeat thread, when the runner gave its connection settings; else heartbeats go from this loop. */
  #thread: Worker | undefined;
  /** With a thread: its lease is held (a heartbeat stored since the last lapse). */
  #held = false;

  private constructor(
    private readonly nc: NatsConnection,
    private kv: JsonKv<typeof Heartbeat>,
    readonly runner: string,
    private readonly events: LivenessEvents,
    private readonly log: Logger,
  ) {}

  static async open(
    nc: NatsConnection,
    runner: string,
    options: { events?: LivenessEvents; log: Logger; heartbeat?: HeartbeatConnection },
  ): Promise<RunnerLiveness> {
    const liveness = new RunnerLiveness(
      nc,
      await RunnerLiveness.#bucket(nc),
      runner,
      options.events ?? {},
      options.log,
    );
    if (options.heartbeat) await liveness.#startThread(options.heartbeat);
    else await liveness.#beat();
    liveness.#watch = await liveness.kv.kv.watch();
    const watch = liveness.#watch;
    // The runners alive already are known before this one says which partitions it owns (its own key is there).
    let rollCalled = () => {};
    const rollCall = new Promise<void>((resolve) => {
      rollCalled = resolve;
    });
    void (async () => {
      for await (const entry of watch) {
        liveness.#heard(entry);
        if (entry.delta === 0) rollCalled();
      }
    })().catch((error: unknown) => options.log.warn(`runner liveness: watch ended: ${messageOf(error)}`));
    const timer = setTimeout(rollCalled, FIRST_ROLL_CALL_MS);
    await rollCall;
    clearTimeout(timer);
    liveness.#timer = setInterval(() => liveness.#tick(), HEARTBEAT_EVERY_MS);
    liveness.#timer.unref();
    return liveness;
  }

  static #bucket(nc: NatsConnection): Promise<JsonKv<typeof Heartbeat>> {
    // A death is confirmed from the leader: a copy a partition left behind may lack a live runner's heartbeat.
    return JsonKv.open(nc, buckets.runners, Heartbeat, { ttl: LIVENESS_TTL_MS, leaderReads: true });
  }

  /** True while this runner's own lease is alive. */
  get alive(): boolean {
    return this.#thread ? this.#held : Date.now() < this.#aliveUntil;
  }

  /** Starts the heartbeat thread and waits for its first stored heartbeat. */
  async #startThread(connection: HeartbeatConnection): Promise<void> {
    const thread = new Worker(new URL("./heartbeatThread.mjs", import.meta.url), {
      workerData: {
        connection: { ...connection, servers: serverUrls(connection.servers) },
        bucket: buckets.runners,
        format: FORMAT_VERSION,
        key: runnerKey(this.runner),
        runner: this.runner,
        ttlMs: LIVENESS_TTL_MS,
        everyMs: HEARTBEAT_EVERY_MS,
        watchdogMs: EVENT_LOOP_WATCHDOG_MS,
      },
    });
    this.#thread = thread;
    const started = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no heartbeat stored within ${THREAD_START_MS} ms`)),
        THREAD_START_MS,
      );
      thread.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      thread.on("message", (message: ThreadMessage) => {
        if (message.type === "stored") {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    thread.on("message", (message: ThreadMessage) => this.#fromThread(message));
    thread.on("error", (error) => this.log.warn(`runner ${this.runner}: heartbeat thread failed: ${messageOf(error)}`));
    thread.unref();
    await started;
  }

  #fromThread(message: ThreadMessage): void {
    if (message.type === "stored") {
      const wasLapsed = this.#lapsed;
      this.#held = true;
      this.#lapsed = false;
      if (wasLapsed) {
        this.log.info(`runner ${this.runner}: liveness lease renewed again`);
        this.events.onRestored?.();
      }
    } else if (message.type === "lapsed") {
      this.#held = false;
      this.#declareLapsed(message.why);
    }
  }

  /** True when `runner`'s lease is alive, as far as the watch has told (this runner: its own lease). No I/O. */
  isAlive(runner: string): boolean {
    if (runner === this.runner) return this.alive;
    const seen = this.#seen.get(runner);
    return seen !== undefined && Date.now() - seen < LIVENESS_TTL_MS;
  }

  /**
   * Reads `runner`'s lease from the bucket: true when it is gone (expired or
   * deleted). Asked before taking a dead runner's session, so a watch that
   * fell behind never hands over the session of a runner that lives.
   */
  async confirmedDead(runner: string): Promise<boolean> {
    try {
      return (await this.kv.get(runnerKey(runner))) === null;
    } catch (error) {
      // A damaged heartbeat is overwritten by its runner within HEARTBEAT_EVERY_MS, or expires: not proof of death yet.
      if (isConclaveError(error, "corrupt_value")) return false;
      throw error;
    }
  }

  /**
   * The runners alive as far as the watch has told, this one included, sorted: every runner that hears
   * the same heartbeats computes the same list (partition ownership is derived from it).
   */
  members(): string[] {
    return [this.runner, ...this.#seen.keys()].sort();
  }

  #heard(entry: KvWatchEntry): void {
    if (entry.operation !== "PUT") {
      // stopped cleanly (`close`): dead at once
      if (this.#seen.delete(runnerOfKey(entry.key))) this.events.onMembersChanged?.();
      return;
    }
    // Any format: a heartbeat of a newer release still says a runner is alive (its `runner` and `at` stay).
    const parsed = Heartbeat.safeParse(safeJson(entry));
    if (!parsed.success || parsed.data.runner === this.runner) return;
    const joined = !this.#seen.has(parsed.data.runner);
    this.#seen.set(parsed.data.runner, Date.now());
    if (joined) this.events.onMembersChanged?.();
  }

  #tick(): void {
    // With a thread, it beats: this loop only says it still turns (the thread's watchdog).
    if (this.#thread) this.#thread.postMessage("tick");
    else this.#checkLapse(false);
    // Runners silent past their TTL are dead: forgotten, so the map holds only runners alive of late.
    const now = Date.now();
    let left = false;
    for (const [runner, seen] of this.#seen)
      if (now - seen >= LIVENESS_TTL_MS) {
        this.#seen.delete(runner);
        left = true;
      }
    if (left) this.events.onMembersChanged?.();
    if (!this.#thread) void this.#beat();
  }

  async #beat(): Promise<void> {
    if (this.#beating) return; // the last one has not been answered yet: one in flight at a time
    this.#beating = true;
    const sentAt = Date.now();
    let lost = false;
    try {
      if (this.#reopen) {
        this.kv = await RunnerLiveness.#bucket(this.nc);
        this.#reopen = false;
      }
      const value = encodeRecord({ runner: this.runner, at: sentAt });
      const key = runnerKey(this.runner);
      // Over the last heartbeat only: it fails when the key expired meanwhile, which proves the lease lapsed.
      this.#revision =
        this.#revision === undefined
          ? await this.kv.kv.put(key, value)
          : await this.kv.kv.update(key, value, this.#revision);
      this.#aliveUntil = Math.max(this.#aliveUntil, sentAt + LIVENESS_TTL_MS);
      this.#suspectSince = undefined;
      if (this.#lapsed) {
        this.#lapsed = false;
        this.log.info(`runner ${this.runner}: liveness lease renewed again`);
        this.events.onRestored?.();
      }
    } catch (error) {
      if (isConflict(error)) {
        lost = true; // the key expired: the next heartbeat starts a new lease
        this.#revision = undefined;
      }
      // NATS away: the next beat tries again. A bucket gone (deleted, or a memory store restarted) is made again.
      if (/no responders|stream not found/i.test(messageOf(error))) this.#reopen = true;
    } finally {
      this.#beating = false;
      this.#checkLapse(lost);
    }
  }

  /**
   * Past `#aliveUntil` the lease may have lapsed. It has for sure when a heartbeat found its key gone (`lost`),
   * or when none was stored within SUSPECT_GRACE_MS more (NATS out of reach); a process that merely stalled
   * finds its key still there with its next heartbeat, and keeps its sessions.
   */
  #checkLapse(lost: boolean): void {
    if (this.#lapsed || this.#aliveUntil === 0 || this.alive) return;
    const now = Date.now();
    if (this.#suspectSince === undefined) {
      this.#suspectSince = now;
      setTimeout(() => this.#checkLapse(false), SUSPECT_GRACE_MS).unref();
    }
    if (!lost && now - this.#suspectSince < SUSPECT_GRACE_MS) return;
    this.#suspectSince = undefined;
    this.#declareLapsed(`no heartbeat stored for ${LIVENESS_TTL_MS} ms`);
  }

  #declareLapsed(why: string): void {
    this.#lapsed = true;
    this.log.warn(`runner ${this.runner}: liveness lease lapsed (${why})`);
    try {
      this.events.onLapsed?.();
    } catch (error) {
      // What the runner lets go of may fail half-way (its connection closed): it owns nothing either way.
      this.log.warn(`runner ${this.runner}: letting its sessions go: ${messageOf(error)}`);
    }
  }

  /** Stops renewing and deletes the lease, so the other runners see this one gone at once. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#watch?.stop();
    this.#aliveUntil = 0;
    const thread = this.#thread;
    if (thread) {
      this.#held = false;
      // The thread deletes the lease and drains its connection; a thread that does not answer is ended.
      const closed = new Promise<void>((resolve) => {
        thread.on("message", (message: ThreadMessage) => message.type === "closed" && resolve());
        thread.once("exit", () => resolve());
      });
      thread.postMessage("stop");
      const timer = setTimeout(() => void thread.terminate(), 2_000);
      await closed;
      clearTimeout(timer);
      await thread.terminate();
    }
    await this.kv.delete(runnerKey(this.runner)).catch(() => {});
  }
}

function safeJson(entry: KvWatchEntry): unknown {
  try {
    return entry.json();
  } catch {
    return null;
  }
}

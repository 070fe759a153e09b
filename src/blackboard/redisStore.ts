/**
 * Blackboards in Redis, one string key per session holding the blackboard's
 * JSON (`conclave:blackboard:<session>`), with node-redis.
 */
import { createClient, ErrorReply } from "redis";
import { withDeadline } from "../deadline.ts";
import { ConclaveError } from "../errors.ts";
import { redactUrl, scrubbed } from "../stores/redact.ts";
import {
  type BlackboardStore,
  BlackboardStoreError,
  checkSessionId,
  corrupt,
  DEFAULT_BLACKBOARD_TIMEOUT_MS,
  decodeBlackboard,
  encodeBlackboard,
  noAnswer,
} from "./store.ts";

/** The key of a session's blackboard is this prefix and the session id. */
export const REDIS_BLACKBOARD_PREFIX = "conclave:blackboard:";

/** Options of the Redis store. */
export interface RedisBlackboardStoreOptions {
  /** Longest one call may take, connecting included. Default DEFAULT_BLACKBOARD_TIMEOUT_MS (3 s). */
  timeoutMs?: number;
  /** Longest a TCP (and TLS) connect may take. Default: `timeoutMs`. */
  connectTimeoutMs?: number;
}

/**
 * A client that never reconnects by itself, and with nothing to wait for
 * fails a command without a connection at once (no offline queue).
 */
const newClient = (url: string, connectTimeoutMs: number) =>
  createClient({
    url,
    socket: { connectTimeout: connectTimeoutMs, reconnectStrategy: false },
    disableOfflineQueue: true,
  });

type RedisClient = ReturnType<typeof newClient>;

/**
 * Blackboards in Redis. The client never reconnects on its own (node-redis's
 * default retries forever, queueing every command meanwhile, so a call on a
 * dead server would hang): a lost connection fails the calls in flight, and
 * the next call connects afresh, once, within the connect timeout. So a dead
 * server costs each call one refused connect, never a storm of retries.
 */
export class RedisBlackboardStore implements BlackboardStore {
  readonly backend = "redis";
  readonly #url: string;
  readonly #timeoutMs: number;
  readonly #connectTimeoutMs: number;
  /** The connection in use or being made; undefined when there is none. */
  #client: Promise<RedisClient> | undefined;
  #closed = false;

  private constructor(url: string, options: RedisBlackboardStoreOptions) {
    this.#url = url;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_BLACKBOARD_TIMEOUT_MS;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? this.#timeoutMs;
  }

  /**
   * A store on the Redis at `url` (`redis://[user:password@]host:port[/db]`,
   * or `rediss://` for TLS), connected: an "unavailable" BlackboardStoreError
   * when the server cannot be reached, a "config" ConclaveError when the URL
   * is not a Redis URL.
   */
  static async open(url: string, options: RedisBlackboardStoreOptions = {}): Promise<RedisBlackboardStore> {
    checkRedisUrl(url);
    const store = new RedisBlackboardStore(url, options);
    try {
      await store.#call("connect", undefined, async (client) => {
        await client.ping();
      });
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  async load(sessionId: string): Promise<Record<string, unknown> | null> {
    checkSessionId("redis", sessionId);
    const text = await this.#call(`load of session ${sessionId}`, sessionId, (client) =>
      client.get(REDIS_BLACKBOARD_PREFIX + sessionId),
    );
    return text === null ? null : decodeBlackboard("redis", sessionId, String(text));
  }

  async save(sessionId: string, blackboard: Record<string, unknown>): Promise<void> {
    checkSessionId("redis", sessionId);
    const text = encodeBlackboard("redis", sessionId, blackboard);
    await this.#call(`save of session ${sessionId}`, sessionId, async (client) => {
      await client.set(REDIS_BLACKBOARD_PREFIX + sessionId, text);
    });
  }

  async erase(sessionId: string): Promise<boolean> {
    checkSessionId("redis", sessionId);
    const removed = await this.#call(`erase of session ${sessionId}`, sessionId, (client) =>
      client.del(REDIS_BLACKBOARD_PREFIX + sessionId),
    );
    return Number(removed) > 0;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    const connected = await client?.catch(() => undefined);
    // destroy, not close: close waits for replies a dead server never sends.
    if (connected?.isOpen) connected.destroy();
  }

  /** Runs one command on a ready connection, within the deadline; every failure is a BlackboardStoreError. */
  async #call<T>(
    what: string,
    sessionId: string | undefined,
    command: (client: RedisClient) => Promise<T>,
  ): Promise<T> {
    if (this.#closed) {
      throw new BlackboardStoreError("unavailable", "redis", `redis blackboard ${what}: the store is closed`, {
        sessionId,
      });
    }
    const where = `redis blackboard ${what} on ${redactUrl(this.#url)}`;
    let used: Promise<RedisClient> | undefined;
    return withDeadline(
      this.#timeoutMs,
      async () => {
        try {
          used = this.#connection();
          return await command(await used);
        } catch (error) {
          if (error instanceof ErrorReply) {
            if (error.message.startsWith("WRONGTYPE") && sessionId) {
              // Someone stored another kind of value (a hash, a list) under the key.
              throw corrupt("redis", sessionId, "the key holds a Redis value that is not a string", error);
            }
          } else {
            // Not the server's answer but the connection's failure: the next call connects afresh.
            void this.#drop(used);
          }
          throw new BlackboardStoreError("unavailable", "redis", `${where} failed: ${scrubbed(error, this.#url)}`, {
            cause: error,
            sessionId,
          });
        }
      },
      () => {
        // A server that stopped answering: drop the connection, the next call makes a new one.
        void this.#drop(used);
        return noAnswer("redis", where, this.#timeoutMs);
      },
    );
  }

  /** The current connection, or a new one when there is none (or it was lost). */
  #connection(): Promise<RedisClient> {
    const current = this.#client;
    if (current) return current;
    const client = newClient(this.#url, this.#connectTimeoutMs);
    // node-redis emits every socket error; without a listener an EventEmitter 'error' would crash the process.
    client.on("error", () => {});
    const connecting: Promise<RedisClient> = client.connect().then(
      () => client,
      (error: unknown) => {
        void this.#drop(connecting);
        if (client.isOpen) client.destroy();
        throw error;
      },
    );
    // A connection that ends (the server went away) is forgotten, so the next call makes a new one.
    client.on("end", () => void this.#drop(connecting));
    this.#client = connecting;
    return connecting;
  }

  /** Forgets a connection (if it is still the current one) and destroys it. */
  async #drop(connection: Promise<RedisClient> | undefined): Promise<void> {
    if (!connection || this.#client !== connection) return;
    this.#client = undefined;
    const client = await connection.catch(() => undefined);
    if (client?.isOpen) client.destroy();
  }
}

/** A "config" error unless `url` is a redis:// or rediss:// URL (printed without its password). */
function checkRedisUrl(url: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    // reported below
  }
  if (protocol !== "redis:" && protocol !== "rediss:") {
    throw new ConclaveError(
      "config",
      `redis blackboard: ${redactUrl(url)} is not a Redis URL (expected redis://host:port or rediss://host:port)`,
    );
  }
}

/**
 * Opening the blackboard store a recipe asks for, from what the runner has
 * configured: its NATS connection, and Redis and PostgreSQL URLs if any.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { setting } from "../config/load.ts";
import { ConclaveError } from "../errors.ts";
import { importOptional } from "../optionalPackages.ts";
import { NatsBlackboardStore } from "./natsStore.ts";
import type { BlackboardBackend, BlackboardStore } from "./store.ts";

/** What a runner has for keeping blackboards. */
export interface BlackboardOptions {
  /** The runner's NATS connection, for the `nats` backend (the default). */
  nc?: NatsConnection;
  /** `redis://…` URL of the `redis` backend. Default: none (recipes asking for redis fail). */
  redisUrl?: string;
  /** `postgres://…` URL of the `postgres` backend. Default: none (recipes asking for postgres fail). */
  postgresUrl?: string;
  /** Longest one store call may take. Default DEFAULT_BLACKBOARD_TIMEOUT_MS (3 s). */
  timeoutMs?: number;
}

/** The environment variables a runner reads its blackboard URLs from. */
export const BLACKBOARD_ENV = { redisUrl: "CONCLAVE_REDIS_URL", postgresUrl: "CONCLAVE_POSTGRES_URL" } as const;

/**
 * The blackboard URLs in the environment: `CONCLAVE_REDIS_URL`, `CONCLAVE_POSTGRES_URL` (an empty one
 * counts as unset; one of another scheme is a "config" ConclaveError naming it).
 */
export function blackboardOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): Pick<BlackboardOptions, "redisUrl" | "postgresUrl"> {
  const options: Pick<BlackboardOptions, "redisUrl" | "postgresUrl"> = {};
  const redisUrl = setting(env, BLACKBOARD_ENV.redisUrl);
  const postgresUrl = setting(env, BLACKBOARD_ENV.postgresUrl);
  if (redisUrl) options.redisUrl = redisUrl;
  if (postgresUrl) options.postgresUrl = postgresUrl;
  return options;
}

/**
 * Opens (connects) the store of `backend`. A backend this runner has not
 * configured is a "config" ConclaveError that says how to configure it; an
 * unreachable one is an "unavailable" BlackboardStoreError. The Redis and
 * PostgreSQL stores load their client (the optional packages redis and pg)
 * here, when first opened: without it, a "missing_dependency" ConclaveError.
 */
export async function openBlackboardStore(
  backend: BlackboardBackend,
  options: BlackboardOptions,
): Promise<BlackboardStore> {
  const timing = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs };
  switch (backend) {
    case "nats":
      if (!options.nc) throw notConfigured("nats", "NATS", "give the runner's NATS connection as the option nc");
      return NatsBlackboardStore.open(options.nc, timing);
    case "redis": {
      if (!options.redisUrl) {
        throw notConfigured(
          "redis",
          "Redis",
          `set ${BLACKBOARD_ENV.redisUrl} or the runner option blackboard.redisUrl`,
        );
      }
      const { RedisBlackboardStore } = await importOptional(
        "the Redis blackboard store",
        ["redis"],
        () => import("./redisStore.ts"),
      );
      return RedisBlackboardStore.open(options.redisUrl, timing);
    }
    case "postgres": {
      if (!options.postgresUrl) {
        throw notConfigured(
          "postgres",
          "PostgreSQL",
          `set ${BLACKBOARD_ENV.postgresUrl} or the runner option blackboard.postgresUrl`,
        );
      }
      const { PostgresBlackboardStore } = await importOptional(
        "the PostgreSQL blackboard store",
        ["pg"],
        () => import("./postgresStore.ts"),
      );
      return PostgresBlackboardStore.open(options.postgresUrl, timing);
    }
    default:
      throw new ConclaveError("config", `unknown blackboard persistence ${JSON.stringify(backend satisfies never)}`);
  }
}

const notConfigured = (backend: BlackboardBackend, name: string, how: string): ConclaveError<"config"> =>
  new ConclaveError(
    "config",
    `recipe asks for ${backend} persistence, but this runner has no ${name} configured: ${how}`,
  );

/**
 * The blackboard stores of one runner: each opened the first time a recipe
 * needs it (so a runner connects to Redis only if some recipe keeps its
 * blackboard there), then shared. A store that failed to open is not kept:
 * the next recipe asking for it tries again.
 */
export class BlackboardStores {
  readonly #opening = new Map<BlackboardBackend, Promise<BlackboardStore>>();
  #closed = false;

  constructor(private readonly options: BlackboardOptions) {}

  /** The store of `backend`, opened on first use. */
  get(backend: BlackboardBackend): Promise<BlackboardStore> {
    if (this.#closed) return Promise.reject(new ConclaveError("unavailable", "blackboard stores are closed"));
    let opening = this.#opening.get(backend);
    if (!opening) {
      opening = openBlackboardStore(backend, this.options);
      this.#opening.set(backend, opening);
      opening.catch(() => {
        if (this.#opening.get(backend) === opening) this.#opening.delete(backend);
      });
    }
    return opening;
  }

  /** Closes every store opened (waiting for any still opening); later `get`s fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const opening = [...this.#opening.values()];
    this.#opening.clear();
    await Promise.allSettled(opening.map(async (store) => (await store).close()));
  }
}

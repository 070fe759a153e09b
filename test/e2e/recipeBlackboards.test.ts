/**
 * A session's blackboard survives a runner restart, with each backend: a
 * first run writes a draft; the runner is killed and another starts (with
 * the same stores); a second run's pre-flight constraint needs that draft,
 * and its agent reads it. Real nats-server, redis-server and PostgreSQL,
 * each private to this file.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { openBlackboardStore } from "../../src/blackboard/open.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { usePostgresServer } from "../helpers/postgres.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { useRedisServer } from "../helpers/redis.ts";

const nats = useNatsServer();
const redis = useRedisServer();
const postgres = usePostgresServer();
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_REDIS_URL: redis.url, CONCLAVE_POSTGRES_URL: postgres.url }),
);
let client: ConclaveClient;

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  client = await connect({ nc: await nats.connect("client") });
});

const meta = { apiVersion: "coreason.ai/v2", kind: "Recipe" };

/** Writes a draft on the topic to the blackboard. */
const writeDraft = (persistence: string): JsonObject => ({
  ...meta,
  metadata: { name: `write-${persistence}` },
  state: { persistence },
  topology: [
    { type: "agent", id: "write", agent_ref: "content.writer", inputs_map: { topic: "topic" }, output_key: "draft" },
  ],
});

/** Needs the earlier run's draft (pre-flight), then publishes it. */
const publishDraft = (persistence: string, topic: string): JsonObject => ({
  ...meta,
  metadata: { name: `publish-${persistence}` },
  state: { persistence },
  requirements: [
    { variable: "draft.text", operator: "contains", value: topic, error_message: "no draft on the blackboard" },
  ],
  topology: [{ type: "agent", id: "publish", agent_ref: "ops.publisher", inputs_map: { draft: "draft" } }],
});

describe.each(["ephemeral", "redis", "postgres"])("a blackboard kept in %s", (persistence) => {
  it("survives a runner restart: the next run of the session reads what the last one wrote", async () => {
    const session = `blackboard-${persistence}`;
    const topic = `Topic-${persistence}`;
    const runner = await processes.spawn(`runner-${persistence}-1`, ["runner"]);
    const first = await client.run(session, writeDraft(persistence), { inputs: { topic } });
    expect(first.status === "completed" && first.outcome).toEqual({ status: "Complete" });
    // It is in the backend the recipe asked for, read with that backend's own store.
    const store = await openBlackboardStore(
      persistence === "ephemeral" ? "nats" : (persistence as "redis" | "postgres"),
      {
        nc: await nats.connect("runner"),
        redisUrl: redis.url,
        postgresUrl: postgres.url,
      },
    );
    expect((await store.load(session))?.draft).toEqual({ text: `${topic}: an overview.` });
    await store.close();

    runner.child.kill("SIGKILL");
    await new Promise<void>((resolve) => runner.child.once("exit", () => resolve()));
    const next = await processes.spawn(`runner-${persistence}-2`, ["runner"]);
    try {
      const second = await client.run(session, publishDraft(persistence, topic));
      expect(second.status === "completed" && second.outcome).toEqual({ status: "Complete" });
      if (second.status !== "completed") return;
      expect(second.output.draft).toEqual({ text: `${topic}: an overview.` });
      expect(second.output.publish).toMatchObject({ status: "published", words: 3 });
      // Another session has none of it: its pre-flight fails, before any agent is called.
      const other = await client.run(`${session}-other`, publishDraft(persistence, topic));
      expect(other.status === "completed" && other.outcome).toEqual({
        status: "Failed",
        error: { code: "preflight_failed", message: "no draft on the blackboard" },
      });
    } finally {
      await next.stop();
    }
  });
});

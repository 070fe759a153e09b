/**
 * Knowledge collections over a real nats-server (the repo's nats.conf plus two tenant accounts),
 * through a runner's relay: a knowledge worker embeds and stores what the client adds, searches it with citations, keeps one
 * tenant's collections from another, and removes a document's chunks and vectors with it.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { connect as connectNats } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonKv } from "../../src/bus/jsonKv.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { KnowledgeRecord } from "../../src/knowledge/store.ts";
import { withTenants } from "../../src/nats/tenants.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer({
  editConfig: (config) =>
    withTenants(config, [
      { name: "alice", password: "alice-secret" },
      { name: "bob", password: "bob-secret" },
    ]),
});
let worker: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;
const tenants: NatsConnection[] = [];

const GUIDE = `# Deployment guide

Conclave runs as a runner and several workers over NATS.

## Backups

The zebra-protocol snapshot runs nightly at 02:00 and copies the JetStream store to cold storage.

## Upgrades

Roll the runners one by one; workers follow after the runners.
`;

const RECIPES = `Sourdough needs a starter fed with flour and water.

A lemon cake wants butter, sugar, eggs and the zest of two lemons.`;

const asTenant = async (name: string): Promise<ConclaveClient> => {
  const nc = await connectNats({ servers: nats.url, user: name, pass: `${name}-secret` });
  tenants.push(nc);
  return connect({ nc });
};

beforeAll(async () => {
  worker = await startWorker({ nc: await nats.connect("worker"), agents: [], services: ["knowledge"], llm: false });
  // Clients' knowledge requests go through a runner, which relays them with the tenant who asked.
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
  await Promise.allSettled(tenants.map((nc) => nc.close()));
});

describe("knowledge collections", () => {
  it("adds documents, lists them, and finds the chunk that answers with its citation", async () => {
    const progress: string[] = [];
    const added = await client.knowledge.add(
      "ops",
      [
        { document: "guide.md", text: GUIDE },
        { document: "recipes.txt", text: RECIPES },
      ],
      { onProgress: (step) => progress.push(`${step.document} ${step.chunksDone}/${step.chunksTotal}`) },
    );
    expect(added.map((document) => document.document)).toEqual(["guide.md", "recipes.txt"]);
    expect(progress).toEqual(["guide.md 3/3", "recipes.txt 1/1"]);

    const listed = await client.knowledge.list("ops");
    expect(listed.map((document) => [document.document, document.chunks, document.embedder])).toEqual([
      ["guide.md", 3, "offline-terms:512"],
      ["recipes.txt", 1, "offline-terms:512"],
    ]);

    const hits = await client.knowledge.search("ops", "when does the nightly backup snapshot run?", { limit: 2 });
    const best = hits[0];
    expect(best).toMatchObject({ collection: "ops", document: "guide.md", heading: "Deployment guide > Backups" });
    expect(best?.text).toContain("zebra-protocol");
    // The citation's offset points at the chunk in the document's text.
    expect(GUIDE.slice(best?.offset, (best?.offset ?? 0) + 10)).toBe(best?.text.slice(0, 10));
    expect(hits.length).toBeLessThanOrEqual(2);
  });

  it("keeps a tenant's collections its own: another tenant, or the runtime's clients, find nothing", async () => {
    const alice = await asTenant("alice");
    const bob = await asTenant("bob");
    await alice.knowledge.add("notes", [
      { document: "secret.md", text: "# Plans\n\nThe launch codename is bluebird." },
    ]);
    const own = await alice.knowledge.search("notes", "launch codename plans");
    expect(own[0]?.text).toContain("bluebird");

    expect(await bob.knowledge.search("notes", "launch codename plans")).toEqual([]);
    expect(await bob.knowledge.list()).toEqual([]);
    expect(await bob.knowledge.remove("notes", "secret.md")).toEqual({ documents: 0, chunks: 0 });
    expect(await client.knowledge.search("notes", "launch codename plans")).toEqual([]);
    expect((await client.knowledge.list()).some((document) => document.collection === "notes")).toBe(false);
    // Still there for its owner after bob's attempt.
    expect((await alice.knowledge.list("notes")).map((document) => document.document)).toEqual(["secret.md"]);
  });

  it("removes a document with its chunks and vectors", async () => {
    await client.knowledge.add("gone", [
      { document: "a.md", text: "# A\n\nAardvarks dig burrows.\n\n# B\n\nBadgers dig setts." },
      { document: "b.txt", text: "Kestrels hover over fields." },
    ]);
    expect(await client.knowledge.remove("gone", "a.md")).toEqual({ documents: 1, chunks: 2 });
    const kv = await JsonKv.open(await nats.connect("worker"), buckets.knowledge, KnowledgeRecord);
    const keys = await kv.keys("*.-.gone.>");
    // Only b.txt's record and its one chunk are left.
    expect(keys.sort()).toEqual([
      expect.stringMatching(/^chunk\.-\.gone\.[0-9a-f]{16}\.0$/),
      expect.stringMatching(/^doc\.-\.gone\./),
    ]);
    const found = await client.knowledge.search("gone", "aardvarks dig burrows", { limit: 5 });
    expect(found.map((hit) => hit.document)).toEqual(["b.txt"]);
    expect((await client.knowledge.list("gone")).map((document) => document.document)).toEqual(["b.txt"]);
  });

  it("replaces a document added again under the same name", async () => {
    const long = Array.from({ length: 6 }, (_, i) => `Paragraph ${i} about ${"lighthouses ".repeat(60)}`).join("\n\n");
    await client.knowledge.add("again", [{ document: "lh.txt", text: long }]);
    await client.knowledge.add("again", [
      { document: "lh.txt", text: "Only one short paragraph about lighthouses now." },
    ]);
    const hits = await client.knowledge.search("again", "lighthouses", { limit: 10 });
    expect(hits.map((hit) => hit.text)).toEqual(["Only one short paragraph about lighthouses now."]);
    expect((await client.knowledge.list("again"))[0]?.chunks).toBe(1);
  });

  it("refuses bad input with one line, before anything is sent", async () => {
    await expect(client.knowledge.add("bad name!", [{ document: "x.txt", text: "x" }])).rejects.toThrow(
      /^bad collection "bad name!": a collection name is 1-64 characters/,
    );
    await expect(client.knowledge.add("ok", ["/nonexistent/file.md"])).rejects.toThrow(
      /^cannot read \/nonexistent\/file\.md: /,
    );
    await expect(client.knowledge.add("ok", [{ document: "paper.pdf", text: "%PDF" }])).rejects.toThrow(
      /^paper\.pdf: PDF is not read yet; extract its text first/,
    );
    await expect(client.knowledge.add("ok", [{ document: "blank.txt", text: "  \n\n " }])).rejects.toThrow(
      /^blank\.txt: no text to add/,
    );
    await expect(client.knowledge.search([], "x")).rejects.toThrow(/at least one collection/);
  });
});

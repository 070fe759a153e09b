/**
 * The memory graph stores against real servers: one nats-server (the repo's
 * nats.conf, connected as the worker role, so its grants are what is tested)
 * and one PostgreSQL for the file, both held to the same contract.
 */
import { type AddressInfo, createServer, type Socket } from "node:net";
import { Kvm } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import type { CorruptValueError } from "../../src/bus/jsonKv.ts";
import { isConclaveError } from "../../src/errors.ts";
import { decodeNodeId, encodeNodeId, MEMORY_GRAPH_BUCKET, nodeKey } from "../../src/memory/graph/natsGraphKeys.ts";
import { NatsMemoryGraphStore } from "../../src/memory/graph/natsGraphStore.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import { PostgresMemoryGraphStore } from "../../src/memory/graph/postgresGraphStore.ts";
import {
  type MemoryGraphBackend,
  type MemoryGraphStore,
  MemoryGraphTimeoutError,
} from "../../src/memory/graph/store.ts";
import {
  InvalidMemoryGraphError,
  type MemoryGraphArtifact,
  type MemoryNodeInput,
  rebaseArtifact,
  validateArtifact,
} from "../../src/memory/graph/types.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { usePostgresServer } from "../helpers/postgres.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const postgres = usePostgresServer();

/** Generous: the 10 000-node test loads a session in one call; still a bound, not a hang. */
const TIMEOUT_MS = 10_000;

interface Backend {
  name: MemoryGraphBackend;
  /** A new store on its own connection (for NATS: a new connection as the worker role). */
  open(): Promise<MemoryGraphStore>;
  /** Whether a store sees another store's writes to a session it has loaded already (the NATS watch). */
  follows: boolean;
}

const backends: Backend[] = [
  {
    name: "nats",
    open: async () => NatsMemoryGraphStore.open(await nats.connect("worker"), { timeoutMs: TIMEOUT_MS }),
    follows: true,
  },
  {
    name: "postgres",
    open: () => PostgresMemoryGraphStore.open(postgres.url, { timeoutMs: TIMEOUT_MS }),
    follows: false,
  },
];

const node = (sessionId: string, id: string, extra: Partial<MemoryNodeInput> = {}): MemoryNodeInput => ({
  id,
  session_id: sessionId,
  kind: "semantic",
  text: `about ${id}`,
  ...extra,
});

/** The rejection of `work`, which must be an InvalidMemoryGraphError. */
async function refusal(work: Promise<unknown>): Promise<InvalidMemoryGraphError> {
  const error = await work.then(
    () => expect.fail("expected the call to be refused"),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(InvalidMemoryGraphError);
  expect(isConclaveError(error, "invalid_memory_graph")).toBe(true);
  return error as InvalidMemoryGraphError;
}

describe.each(backends)("$name memory graph store", (backend) => {
  const session = (name: string) => `${backend.name}-${name}`;

  it("upserts a node and reads it back; upserting again keeps created_at and moves updated_at", async () => {
    const store = await backend.open();
    const s = session("upsert");
    const first = await store.upsertNode(
      node(s, "fact:user.city", {
        text: "the user lives in Zürich",
        topics: ["travel", "home"],
        recurrence: 3,
        data: { label: "city", nested: { list: [1, 2.5, null] } },
        embedding: [0.1, -0.2, 0.3],
      }),
    );
    expect(first.created_at).toBe(first.updated_at);
    const read = await store.node(s, "fact:user.city");
    expect(read).toEqual(first);
    expect(read).toMatchObject({ recurrence: 3, topics: ["travel", "home"], embedding: [0.1, -0.2, 0.3] });

    const second = await store.upsertNode(node(s, "fact:user.city", { topics: ["home"], recurrence: 4 }));
    expect(second.created_at).toBe(first.created_at);
    expect(second.updated_at).toBeGreaterThan(first.updated_at);
    expect(second).toMatchObject({ recurrence: 4, topics: ["home"], data: {} });
    expect(second.embedding).toBeUndefined();

    // What was stored, not only the copy in memory: a fresh store loads the same.
    const fresh = await backend.open();
    expect(await fresh.node(s, "fact:user.city")).toEqual(second);
    expect(await fresh.node(s, "nothing")).toBeNull();
    await Promise.all([store.close(), fresh.close()]);
  });

  it("refuses an invalid node, naming the field", async () => {
    const store = await backend.open();
    const error = await refusal(store.upsertNode(node(session("invalid"), "bad id!", { topics: ["Upper"] })));
    expect(error.message).toMatch(/id: a node id must be/);
    expect(error.message).toMatch(/topics\[0\]: a topic must be lowercase/);
    expect(await store.nodes(session("invalid"))).toEqual([]);
    await store.close();
  });

  it("lists nodes, all or of one kind, ordered by id", async () => {
    const store = await backend.open();
    const s = session("kinds");
    await store.upsertNode(node(s, "c", { kind: "procedural", data: { label: "deploy" } }));
    await store.upsertNode(node(s, "a", { kind: "episodic", data: { turn_id: 1, tools: [] } }));
    await store.upsertNode(node(s, "b", { kind: "procedural" }));
    await store.upsertNode(node(s, "state", { kind: "runtime_state", data: { turn_count: 2 } }));
    expect((await store.nodes(s)).map((n) => n.id)).toEqual(["a", "b", "c", "state"]);
    expect((await store.nodes(s, "procedural")).map((n) => n.id)).toEqual(["b", "c"]);
    expect(await store.nodes(s, "persona")).toEqual([]);
    expect(await store.nodes(session("kinds-other"))).toEqual([]);
    await store.close();
  });

  it("adds edges once each, and refuses one to a node that does not exist", async () => {
    const store = await backend.open();
    const s = session("edges");
    for (const id of ["q", "fact:a.b", "fix"]) await store.upsertNode(node(s, id));
    await store.addEdge({ session_id: s, from: "q", to: "fact:a.b", kind: "about" });
    await store.addEdge({ session_id: s, from: "fix", to: "q", kind: "resolves" });
    await store.addEdge({ session_id: s, from: "q", to: "fact:a.b", kind: "about" });
    await store.addEdge({ session_id: s, from: "q", to: "fact:a.b", kind: "mentions" });
    const expected = [
      { session_id: s, from: "fix", to: "q", kind: "resolves" },
      { session_id: s, from: "q", to: "fact:a.b", kind: "about" },
      { session_id: s, from: "q", to: "fact:a.b", kind: "mentions" },
    ];
    expect(await store.edges(s)).toEqual(expected);

    const error = await refusal(store.addEdge({ session_id: s, from: "q", to: "zz", kind: "about" }));
    expect(error.message).toContain("'q' → 'zz' (about): no node 'zz'");
    expect(await store.edges(s)).toEqual(expected);
    const fresh = await backend.open();
    expect(await fresh.edges(s)).toEqual(expected);
    await Promise.all([store.close(), fresh.close()]);
  });

  it("removes a node with its edges", async () => {
    const store = await backend.open();
    const s = session("remove");
    for (const id of ["a", "b", "c"]) await store.upsertNode(node(s, id));
    await store.addEdge({ session_id: s, from: "a", to: "b", kind: "follows" });
    await store.addEdge({ session_id: s, from: "b", to: "c", kind: "follows" });
    await store.addEdge({ session_id: s, from: "a", to: "c", kind: "about" });
    expect(await store.removeNode(s, "b")).toBe(true);
    expect(await store.removeNode(s, "b")).toBe(false);
    const remaining = [{ session_id: s, from: "a", to: "c", kind: "about" }];
    expect(await store.node(s, "b")).toBeNull();
    expect((await store.nodes(s)).map((n) => n.id)).toEqual(["a", "c"]);
    expect(await store.edges(s)).toEqual(remaining);
    const fresh = await backend.open();
    expect((await fresh.nodes(s)).map((n) => n.id)).toEqual(["a", "c"]);
    expect(await fresh.edges(s)).toEqual(remaining);
    await Promise.all([store.close(), fresh.close()]);
  });

  it("exports a session and imports it under a fresh session id, round-tripping equal", async () => {
    const store = await backend.open();
    const from = session("export");
    const to = session("import");
    await store.upsertNode(node(from, "p", { kind: "persona", data: { traits: ["curious"] }, topics: ["me"] }));
    await store.upsertNode(node(from, "e:1", { kind: "episodic", recurrence: 2, embedding: [0.5, 0.25] }));
    await store.upsertNode(node(from, "f.x", { text: "東京 🚄" }));
    await store.addEdge({ session_id: from, from: "e:1", to: "f.x", kind: "mentions" });
    await store.addEdge({ session_id: from, from: "f.x", to: "p", kind: "about" });
    // The target's graph is replaced, not merged.
    await store.upsertNode(node(to, "old"));

    const exported = await store.exportSession(from);
    expect(exported.nodes).toHaveLength(3);
    expect(exported.edges).toHaveLength(2);
    const rebased = rebaseArtifact(exported, to);
    await store.importSession(rebased);
    expect(await store.exportSession(to)).toEqual(rebased);
    const fresh = await backend.open();
    expect(await fresh.exportSession(to)).toEqual(rebased);
    // The source is untouched.
    expect(await fresh.exportSession(from)).toEqual(exported);
    await Promise.all([store.close(), fresh.close()]);
  });

  it("refuses an artifact with a dangling edge, naming it, and changes nothing", async () => {
    const store = await backend.open();
    const s = session("dangling");
    await store.upsertNode(node(s, "kept"));
    const before = await store.exportSession(s);
    const artifact: MemoryGraphArtifact = {
      version: 1,
      session_id: s,
      nodes: [{ ...before.nodes[0]!, id: "a" }],
      edges: [{ session_id: s, from: "a", to: "zz", kind: "about" }],
    };
    const error = await refusal(store.importSession(artifact));
    expect(error.problems).toEqual(["edges[0]: 'a' → 'zz': no node 'zz'"]);
    expect(error.message).toContain("edges[0]: 'a' → 'zz': no node 'zz'");
    expect(await store.exportSession(s)).toEqual(before);
    const fresh = await backend.open();
    expect(await fresh.exportSession(s)).toEqual(before);
    await Promise.all([store.close(), fresh.close()]);
  });

  it("a second store instance sees the first one's writes", async () => {
    const writer = await backend.open();
    const reader = await backend.open();
    const s = session("shared");
    if (backend.follows) {
      // Loaded (and followed) before any write.
      expect(await reader.nodes(s)).toEqual([]);
    }
    const written = await writer.upsertNode(node(s, "n:1", { topics: ["shared"] }));
    await writer.upsertNode(node(s, "n:2"));
    await writer.addEdge({ session_id: s, from: "n:1", to: "n:2", kind: "follows" });
    if (backend.follows) {
      await until(async () => (await reader.edges(s)).length === 1, { what: "the edge reaching the reader" });
    }
    expect(await reader.node(s, "n:1")).toEqual(written);
    expect((await reader.nodes(s)).map((n) => n.id)).toEqual(["n:1", "n:2"]);
    expect(await reader.edges(s)).toEqual([{ session_id: s, from: "n:1", to: "n:2", kind: "follows" }]);
    if (backend.follows) {
      await writer.removeNode(s, "n:2");
      await until(async () => (await reader.node(s, "n:2")) === null, { what: "the removal reaching the reader" });
      expect(await reader.edges(s)).toEqual([]);
      expect((await reader.nodes(s)).map((n) => n.id)).toEqual(["n:1"]);
    }
    await Promise.all([writer.close(), reader.close()]);
  });

  it("holds 10 000 nodes of a session in memory", { timeout: 120_000 }, async () => {
    const store = await backend.open();
    const s = session("large");
    const ids = Array.from({ length: 10_000 }, (_, index) => `node:${String(index).padStart(5, "0")}`);
    for (let start = 0; start < ids.length; start += 250) {
      await Promise.all(
        ids.slice(start, start + 250).map((id, index) =>
          store.upsertNode(
            node(s, id, {
              kind: index % 2 ? "semantic" : "episodic",
              topics: ["bulk"],
              embedding: [index / 250, 1],
            }),
          ),
        ),
      );
    }
    const all = await store.nodes(s);
    expect(all).toHaveLength(10_000);
    expect(all[0]?.id).toBe("node:00000");
    expect(await store.nodes(s, "episodic")).toHaveLength(5_000);
    // A fresh store loads them all in its first call.
    const fresh = await backend.open();
    expect(await fresh.nodes(s)).toHaveLength(10_000);
    await Promise.all([store.close(), fresh.close()]);
  });
});

describe("nats memory graph store", () => {
  it("encodes node ids into one KV key token, one-to-one", () => {
    expect(encodeNodeId("fact:user.city")).toBe("fact=3Auser=2Ecity");
    expect(nodeKey("s1", "a.b:c")).toBe("s1.n.a=2Eb=3Ac");
    for (const id of ["a", "...", ":.:", "x-y_z", "A.B.C"]) expect(decodeNodeId(encodeNodeId(id))).toBe(id);
  });

  it("skips a stored value that is not a valid node, telling onInvalid", async () => {
    const nc = await nats.connect("worker");
    const invalid: CorruptValueError[] = [];
    const store = await NatsMemoryGraphStore.open(nc, {
      timeoutMs: TIMEOUT_MS,
      onInvalid: (error) => invalid.push(error),
    });
    const s = "nats-corrupt";
    await store.upsertNode(node(s, "good"));
    const kv = await new Kvm(nc).open(MEMORY_GRAPH_BUCKET);
    await kv.put(nodeKey(s, "broken"), "not json");
    await kv.put(nodeKey(s, "wrong"), JSON.stringify({ id: "wrong", session_id: s }));
    await until(() => invalid.length === 2, { what: "two invalid values reported" });
    expect(invalid.map((error) => error.key).sort()).toEqual([nodeKey(s, "broken"), nodeKey(s, "wrong")]);
    expect(invalid.find((error) => error.key === nodeKey(s, "broken"))?.message).toMatch(/not JSON/);
    expect((await store.nodes(s)).map((n) => n.id)).toEqual(["good"]);

    // A store loading the session afresh skips them too.
    const fresh = await NatsMemoryGraphStore.open(nc, { timeoutMs: TIMEOUT_MS, onInvalid: () => {} });
    expect((await fresh.nodes(s)).map((n) => n.id)).toEqual(["good"]);
    await Promise.all([store.close(), fresh.close()]);
  });
});

describe("postgres memory graph store", () => {
  it("fails with a MemoryGraphTimeoutError when the server does not answer", async () => {
    // Accepts connections and never answers: a server that hangs, not one that refuses.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const error = await PostgresMemoryGraphStore.open(`postgres://conclave:secret@127.0.0.1:${port}/postgres`, {
        timeoutMs: 300,
      }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(MemoryGraphTimeoutError);
      expect(isConclaveError(error, "timeout")).toBe(true);
      expect((error as Error).message).toMatch(/migration .*no answer within 300 ms/);
      expect((error as Error).message).not.toContain("secret");
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("validateArtifact", () => {
  const base = (id: string, sessionId = "s") => ({
    id,
    session_id: sessionId,
    kind: "semantic" as const,
    text: "",
    topics: [],
    recurrence: 1,
    data: {},
    created_at: 1,
    updated_at: 1,
  });

  it("names duplicate ids, nodes and edges of another session, and dangling edges", () => {
    const artifact = {
      version: 1,
      session_id: "s",
      nodes: [base("a"), base("b"), base("a"), base("c", "other")],
      edges: [
        { session_id: "s", from: "a", to: "b", kind: "about" },
        { session_id: "s", from: "a", to: "b", kind: "about" },
        { session_id: "other", from: "b", to: "c", kind: "about" },
        { session_id: "s", from: "a", to: "zz", kind: "about" },
      ],
    };
    let error: unknown;
    try {
      validateArtifact(artifact);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidMemoryGraphError);
    expect((error as InvalidMemoryGraphError).problems).toEqual([
      "nodes[2]: duplicate node id 'a' (first at nodes[0])",
      "nodes[3]: node 'c' is of session 'other', not 's'",
      "edges[2]: 'b' → 'c': edge is of session 'other', not 's'",
      "edges[3]: 'a' → 'zz': no node 'zz'",
    ]);
  });

  it("names the fields that fail the schema", () => {
    expect(() => validateArtifact({ version: 2, session_id: "s", nodes: [{ id: "" }], edges: [] })).toThrow(
      /version: .*nodes\[0\]\.id/,
    );
  });
});

describe("openMemoryGraph", () => {
  it("is a config error when postgres is asked without a URL", async () => {
    const error = await openMemoryGraph({ backend: "postgres", env: {} }).catch((caught: unknown) => caught);
    expect(isConclaveError(error, "config")).toBe(true);
    expect((error as Error).message).toMatch(/CONCLAVE_POSTGRES_URL/);
    const fromEnv = await openMemoryGraph({ env: { CONCLAVE_MEMORY_BACKEND: "postgres" } }).catch((c: unknown) => c);
    expect(isConclaveError(fromEnv, "config")).toBe(true);
    const unknown = await openMemoryGraph({ env: { CONCLAVE_MEMORY_BACKEND: "redis" } }).catch((c: unknown) => c);
    expect((unknown as Error).message).toMatch(
      /CONCLAVE_MEMORY_BACKEND="redis" is invalid: must be one of nats, postgres/,
    );
  });

  it("opens the backend the environment names", async () => {
    const store = await openMemoryGraph({
      env: { CONCLAVE_MEMORY_BACKEND: "postgres", CONCLAVE_POSTGRES_URL: postgres.url },
    });
    expect(store.backend).toBe("postgres");
    await store.close();
    const nc = await nats.connect("worker");
    const byDefault = await openMemoryGraph({ nc, env: {} });
    expect(byDefault.backend).toBe("nats");
    await byDefault.close();
  });
});

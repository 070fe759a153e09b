/**
 * Procedural memory: the offline extractor's patches, adapters dispatched by label (exact, longest
 * dotted prefix, fallback), a failing adapter recorded and warned about while the commit still
 * returns, a later instruction updating its label's node, results that survive a reopen of the
 * graph store, and the model extractor's patches through the real openai client. The memory runs
 * on a real nats-server; the model is the suite's local OpenAI-compatible server.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it, onTestFinished } from "vitest";
import { MemoryRetrieveReply } from "../../src/contracts/memory.ts";
import { TurnWarning } from "../../src/contracts/turn.ts";
import { ensureMemoryStream } from "../../src/eventlog/streams.ts";
import { EpisodeStore } from "../../src/memory/episodeStore.ts";
import { NatsMemoryGraphStore } from "../../src/memory/graph/natsGraphStore.ts";
import { extractLearning, extractOffline } from "../../src/memory/learn/index.ts";
import { patchesOf } from "../../src/memory/learn/patchRules.ts";
import {
  definePatchAdapter,
  type PatchAdapter,
  PatchAdapterRegistry,
  PROCEDURE_RESULTS_KEPT,
  type ProceduralPatch,
  type ProcedureData,
  procedureOf,
} from "../../src/memory/procedural/index.ts";
import { SessionMemory, type SessionMemoryOptions } from "../../src/memory/sessionMemory.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { modelAgainst } from "../llm/fixtures.ts";

const nats = useNatsServer();

const labelsOf = (text: string) => patchesOf(text).map(({ label, instruction }) => ({ label, instruction }));

describe("the offline extractor's patches", () => {
  it("turns standing instructions about how to answer into labelled patches", () => {
    expect(labelsOf("Keep your answers short.")).toEqual([
      { label: "style.length", instruction: "Keep answers short" },
    ]);
    expect(labelsOf("Could you please keep your replies brief?")).toEqual([
      { label: "style.length", instruction: "Keep answers short" },
    ]);
    expect(labelsOf("Be more detailed")).toEqual([{ label: "style.length", instruction: "Give detailed answers" }]);
    expect(labelsOf("From now on, answer in Spanish.")).toEqual([
      { label: "style.language", instruction: "Answer in Spanish" },
    ]);
    expect(labelsOf("I'd like you to be less formal")).toEqual([
      { label: "style.tone", instruction: "Use a casual tone" },
    ]);
    expect(labelsOf("Don't use emojis, and avoid jargon please.")).toEqual([
      { label: "style.avoid.emojis", instruction: "Don't use emojis" },
      { label: "style.avoid.jargon", instruction: "Don't use jargon" },
    ]);
    expect(patchesOf("Stop using bullet points in your answers")).toEqual<ProceduralPatch[]>([
      { label: "style.avoid.bullet_point", instruction: "Don't use bullet points", data: { value: "bullet points" } },
    ]);
  });

  it("keeps one patch per label, the last said", () => {
    expect(labelsOf("Keep answers short. Actually, be more detailed.")).toEqual([
      { label: "style.length", instruction: "Give detailed answers" },
    ]);
  });

  it("reads no instruction into one-off requests, statements or talk about answers", () => {
    for (const text of [
      "Explain this in Spanish",
      "The answer in Spanish was wrong",
      "How do I say hello in Spanish?",
      "I keep my answers short",
      "don't use the car tomorrow",
      "no worries",
      "be careful",
    ]) {
      expect(patchesOf(text), text).toEqual([]);
    }
  });

  it("puts the patches in the turn's learning, alongside its facts; none: no patches field", () => {
    const learning = extractOffline({
      user_message: "I live in Porto. Answer in Portuguese.",
      reply: "Ok.",
      turn_id: 1,
    });
    expect(learning.facts.map((fact) => fact.key)).toEqual(["home"]);
    expect(learning.patches).toEqual([
      { label: "style.language", instruction: "Answer in Portuguese", data: { value: "portuguese" } },
    ]);
    expect(extractOffline({ user_message: "I live in Porto.", reply: "Ok.", turn_id: 1 })).not.toHaveProperty(
      "patches",
    );
  });
});

describe("the patch adapter registry", () => {
  const patch = (label: string): ProceduralPatch => ({ label, instruction: `do ${label}`, data: {} });
  const context = { session_id: "s", turn_id: 3 };
  const applying = (label: string, name?: string): PatchAdapter =>
    definePatchAdapter({ label, ...(name ? { name } : {}), apply: (p) => ({ status: "applied", detail: p.label }) });

  it("dispatches by exact label, else the longest registered dotted prefix, else the fallback", async () => {
    const registry = new PatchAdapterRegistry([
      applying("style", "style-any"),
      applying("style.avoid", "avoid"),
      applying("style.language", "language"),
    ]);
    expect(registry.labels).toEqual(["style", "style.avoid", "style.language"]);
    expect(registry.adapterFor("style.language").name).toBe("language");
    expect(registry.adapterFor("style.avoid.emojis").name).toBe("avoid");
    expect(registry.adapterFor("style.length").name).toBe("style-any");
    // A prefix is whole dotted segments: "styles" is not under "style".
    expect(registry.adapterFor("styles.length").label).toBe("fallback");
    await expect(registry.dispatch(patch("style.avoid.jargon"), context)).resolves.toEqual({
      adapter: "avoid",
      status: "applied",
      detail: "style.avoid.jargon",
      turn_id: 3,
    });
    await expect(registry.dispatch(patch("format.citations"), context)).resolves.toEqual({
      adapter: "fallback",
      status: "noted",
      detail: "no adapter handles 'format.citations': kept as a note",
      turn_id: 3,
    });
  });

  it("uses the fallback it is given, and records an adapter that throws, rejects, answers junk or hangs as failed", async () => {
    const throwing = definePatchAdapter({
      label: "a",
      apply: () => {
        throw new Error("synchronous boom");
      },
    });
    const rejecting = definePatchAdapter({ label: "b", apply: async () => Promise.reject(new Error("async boom")) });
    const junk = { label: "c", apply: () => ({ status: "done" }) } as unknown as PatchAdapter;
    const hanging = definePatchAdapter({ label: "d", apply: () => new Promise<never>(() => {}) });
    const fallback = definePatchAdapter({ label: "mine", apply: () => ({ status: "noted" }) });
    const registry = new PatchAdapterRegistry([throwing, rejecting, junk, hanging], { fallback, timeoutMs: 100 });
    const results = await Promise.all(
      ["a", "b.x", "c", "d", "e"].map((label) => registry.dispatch(patch(label), context)),
    );
    expect(results.map(({ adapter, status, detail }) => ({ adapter, status, detail }))).toEqual([
      { adapter: "a", status: "failed", detail: "synchronous boom" },
      { adapter: "b", status: "failed", detail: "async boom" },
      { adapter: "c", status: "failed", detail: "answered no result ({ status: applied | noted | failed })" },
      { adapter: "d", status: "failed", detail: "no result within 100 ms" },
      { adapter: "mine", status: "noted", detail: "" },
    ]);
  });

  it("refuses an adapter whose label is not dotted lowercase", () => {
    expect(() => definePatchAdapter({ label: "Style", apply: () => ({ status: "applied" }) })).toThrow(TypeError);
    expect(() => new PatchAdapterRegistry([{ label: "style.", apply: () => ({ status: "applied" }) }])).toThrow(
      /dotted lowercase/,
    );
  });
});

let sessions = 0;

/** A SessionMemory on the file's nats-server, with its own connection and graph store; and a fresh session. */
async function memoryWith(options: SessionMemoryOptions = {}) {
  const nc = await nats.connect("worker");
  const jsm = await jetstreamManager(nc);
  await ensureMemoryStream(jsm);
  const graph = await NatsMemoryGraphStore.open(nc, { timeoutMs: 5_000 });
  onTestFinished(() => graph.close());
  const memory = new SessionMemory(graph, new EpisodeStore(jetstream(nc), jsm), options);
  const session = `procedural-${++sessions}`;
  const commit = (turn_id: number, user_text: string) =>
    memory.commit({ session_id: session, turn_id, user_text, response: "Okay.", intent: "inform", ts: 0 });
  const retrieve = async (turn_id: number) =>
    MemoryRetrieveReply.parse(await memory.retrieve({ session_id: session, turn_id, user_message: "hello", limit: 0 }));
  const procedure = async (label: string) => {
    const node = await graph.node(session, `procedure.${label}`);
    return node ? { node, data: procedureOf(node) as ProcedureData } : undefined;
  };
  return { graph, memory, session, commit, retrieve, procedure };
}

describe("SessionMemory's procedural patches (nats-server)", () => {
  it("dispatches a turn's patches by label, records each result on a procedural node, and counts them", async () => {
    const seen: string[] = [];
    const language = definePatchAdapter({
      label: "style.language",
      name: "language",
      apply: (patch, context) => {
        seen.push(`${patch.label}@${context.session_id}#${context.turn_id}`);
        return { status: "applied", detail: `replies in ${String(patch.data.value)}` };
      },
    });
    const { commit, retrieve, procedure, session } = await memoryWith({
      patchAdapters: [language, definePatchAdapter({ label: "style", apply: () => ({ status: "applied" }) })],
    });
    const reply = await commit(1, "Keep your answers short, and answer in Spanish from now on.");
    expect(reply.warnings).toBeUndefined();
    expect(reply.summary).toMatch(/; procedures applied 2 noted 0 failed 0$/);
    expect(seen).toEqual([`style.language@${session}#1`]);

    const spanish = await procedure("style.language");
    expect(spanish?.node).toMatchObject({ kind: "procedural", text: "Answer in Spanish", recurrence: 1 });
    expect(spanish?.node.topics.length).toBeGreaterThan(0);
    expect(spanish?.data).toEqual<ProcedureData>({
      label: "style.language",
      patch: { label: "style.language", instruction: "Answer in Spanish", data: { value: "spanish" } },
      results: [{ adapter: "language", status: "applied", detail: "replies in spanish", turn_id: 1 }],
      created_turn: 1,
      updated_turn: 1,
    });
    // style.length has no adapter of its own: the `style` one (its prefix) ran.
    expect((await procedure("style.length"))?.data.results).toEqual([
      { adapter: "style", status: "applied", detail: "", turn_id: 1 },
    ]);
    expect((await retrieve(2)).procedures).toEqual(expect.arrayContaining(["Keep answers short", "Answer in Spanish"]));
  });

  it("sends a label no adapter covers to the fallback: noted, kept, but not put in the context", async () => {
    const { commit, retrieve, procedure } = await memoryWith({ patchAdapters: [] });
    const reply = await commit(1, "Don't use emojis.");
    expect(reply.summary).toMatch(/procedures applied 0 noted 1 failed 0$/);
    expect((await procedure("style.avoid.emojis"))?.data.results).toEqual([
      {
        adapter: "fallback",
        status: "noted",
        detail: "no adapter handles 'style.avoid.emojis': kept as a note",
        turn_id: 1,
      },
    ]);
    expect((await retrieve(2)).procedures).toEqual([]);
  });

  it("records an adapter that throws as failed, warns memory_pattern_persistence, and still returns the commit", async () => {
    const throwing = definePatchAdapter({
      label: "style.length",
      name: "length-sync",
      apply: () => {
        throw new Error("length store offline");
      },
    });
    const { commit, retrieve, procedure } = await memoryWith({ patchAdapters: [throwing] });
    const reply = await commit(1, "I live in Lisbon. Keep your answers brief.");
    expect(reply.stored).toBe(true);
    expect(reply.summary).toMatch(/^episode of turn 1; facts \+1 .*; procedures applied 0 noted 0 failed 1$/);
    expect(reply.warnings).toHaveLength(1);
    const [warning] = reply.warnings ?? [];
    expect(TurnWarning.parse(warning)).toEqual({
      stage: "memory_commit",
      code: "memory_pattern_persistence",
      message: "failed: patch adapter 'length-sync' on 'style.length': length store offline",
      subject: "memory",
    });
    expect((await procedure("style.length"))?.data.results).toEqual([
      { adapter: "length-sync", status: "failed", detail: "length store offline", turn_id: 1 },
    ]);
    // The rest of the turn's learning went in all the same; a failed procedure is not in the context.
    const retrieved = await retrieve(2);
    expect(retrieved.user_facts).toEqual(["lives in Lisbon"]);
    expect(retrieved.procedures).toEqual([]);
  });

  it("updates a label's node when a later turn says otherwise, keeping the last few results", async () => {
    const { graph, session, commit, retrieve, procedure } = await memoryWith();
    await commit(1, "Keep your answers short.");
    await commit(2, "Answer in French.");
    expect((await retrieve(3)).procedures).toEqual(["Answer in French", "Keep answers short"]);

    await commit(3, "Please be more detailed.");
    const length = await procedure("style.length");
    expect(length?.node).toMatchObject({ text: "Give detailed answers", recurrence: 2 });
    expect(length?.data).toMatchObject({
      patch: { label: "style.length", instruction: "Give detailed answers", data: { value: "detailed" } },
      created_turn: 1,
      updated_turn: 3,
    });
    expect(length?.data.results.map(({ adapter, status, turn_id }) => [adapter, status, turn_id])).toEqual([
      ["style", "applied", 1],
      ["style", "applied", 3],
    ]);
    // One node per label: updated, not appended.
    expect((await graph.nodes(session, "procedural")).map((node) => node.id)).toEqual([
      "procedure.style.language",
      "procedure.style.length",
    ]);
    expect((await retrieve(4)).procedures).toEqual(["Give detailed answers", "Answer in French"]);

    for (let turn = 4; turn <= 4 + PROCEDURE_RESULTS_KEPT; turn++) await commit(turn, "Be more detailed.");
    const kept = (await procedure("style.length"))?.data.results.map((result) => result.turn_id);
    expect(kept).toEqual([5, 6, 7, 8, 9]);
  });

  it("keeps the nodes and their results in the store: a store opened again reads them, and retrieval uses them", async () => {
    const { session, commit } = await memoryWith();
    await commit(1, "Don't use jargon. Use a formal tone.");

    const nc = await nats.connect("worker");
    const jsm = await jetstreamManager(nc);
    const reopened = await NatsMemoryGraphStore.open(nc, { timeoutMs: 5_000 });
    onTestFinished(() => reopened.close());
    const node = await reopened.node(session, "procedure.style.avoid.jargon");
    expect(node && procedureOf(node)?.results).toEqual([
      { adapter: "style", status: "applied", detail: "answers follow: Don't use jargon", turn_id: 1 },
    ]);
    const again = new SessionMemory(reopened, new EpisodeStore(jetstream(nc), jsm));
    const retrieved = await again.retrieve({ session_id: session, turn_id: 2, user_message: "hi", limit: 0 });
    expect(new Set(retrieved.procedures)).toEqual(new Set(["Don't use jargon", "Use a formal tone"]));
  });
});

describe("the model extractor's patches (real openai client, local server)", () => {
  const answer = {
    facts: [],
    threads_opened: [],
    threads_resolved_keys: [],
    episode: { text: "The user set how to be answered.", topics: ["style"] },
  };

  /** A local server answering `content` as the model's structured output, and the real client against it. */
  const modelAnswering = (content: unknown) => modelAgainst([{ content: JSON.stringify(content) }], { maxRetries: 0 });

  it("asks for patches in strict structured output, and the memory records them by label", async () => {
    const { server, model } = await modelAnswering({
      ...answer,
      patches: [
        { label: "Style.Language", instruction: " Answer in Greek ", value: "greek" },
        { label: "format.citations", instruction: "Cite sources with links", value: null },
        { label: "...", instruction: "no label left", value: null },
        { label: "style.tone", instruction: "   ", value: null },
      ],
    });
    const { commit, procedure, retrieve } = await memoryWith({ model });
    const reply = await commit(1, "Talk to me in Greek, and always cite your sources.");
    expect(reply.summary).toMatch(/procedures applied 1 noted 1 failed 0$/);

    const [request] = server.requests;
    expect(request?.response_format?.json_schema?.name).toBe("memory_learning");
    expect(request?.response_format?.json_schema?.strict).toBe(true);
    const schema = request?.response_format?.json_schema?.schema as { required: string[] };
    expect(schema.required).toContain("patches");

    expect((await procedure("style.language"))?.data).toMatchObject({
      patch: { label: "style.language", instruction: "Answer in Greek", data: { value: "greek" } },
      results: [{ adapter: "style", status: "applied" }],
    });
    expect((await procedure("format.citations"))?.data).toMatchObject({
      patch: { label: "format.citations", instruction: "Cite sources with links", data: {} },
      results: [{ adapter: "fallback", status: "noted" }],
    });
    expect(await procedure("style.tone")).toBeUndefined();
    expect((await retrieve(2)).procedures).toEqual(["Answer in Greek"]);
  });

  it("takes an answer without patches (a model that leaves them out) as a valid one with none", async () => {
    const { model } = await modelAnswering(answer);
    const learning = await extractLearning({ user_message: "Keep answers short.", reply: "Ok.", turn_id: 1 }, model);
    expect(learning.path).toBe("model");
    expect(learning).not.toHaveProperty("patches");
    const nulls = await modelAnswering({ ...answer, patches: null });
    const withNull = await extractLearning({ user_message: "Hi.", reply: "Ok.", turn_id: 1 }, nulls.model);
    expect(withNull.path).toBe("model");
    expect(withNull).not.toHaveProperty("patches");
  });
});

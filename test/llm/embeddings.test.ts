/**
 * Embedders: the openai one through the real `openai` client against the suite's local
 * OpenAI-compatible server (POST /v1/embeddings), the offline one, and their configuration.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEmbedder,
  EmbeddingConfigError,
  EmbeddingError,
  embeddingConfigFromEnv,
  OFFLINE_EMBEDDING_MODEL,
  type OpenAIEmbeddingConfig,
  offlineEmbedder,
  openAIEmbedder,
} from "../../src/llm/embeddings.ts";
import { LlmError } from "../../src/llm/errors.ts";
import { cosine, offlineEmbedding } from "../../src/memory/learn/index.ts";
import {
  type EmbeddingReply,
  hashedEmbedding,
  type OpenAIServer,
  scripted,
  startOpenAIServer,
  TEST_EMBEDDING_DIMS,
} from "../helpers/openaiServer.ts";

/** What the next embeddings requests get: the default vectors unless a test scripts otherwise. */
let next: (input: string[]) => EmbeddingReply = () => ({});
let server: OpenAIServer;

beforeAll(async () => {
  server = await startOpenAIServer(scripted({ content: "not used" }), {
    embeddings: (body) => next(typeof body.input === "string" ? [body.input] : body.input),
  });
});
afterAll(() => server.stop());

const config = (overrides: Partial<OpenAIEmbeddingConfig> = {}): OpenAIEmbeddingConfig => ({
  kind: "openai",
  baseURL: server.url,
  apiKey: "sk-test",
  model: "embed-small",
  timeoutMs: 5_000,
  maxRetries: 0,
  ...overrides,
});

/** The error `work` rejects with (the test fails if it resolves). */
async function failure(work: Promise<unknown>): Promise<EmbeddingError> {
  const error = await work.then(
    () => expect.fail("expected the call to fail"),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(EmbeddingError);
  return error as EmbeddingError;
}

describe("openAIEmbedder (real openai client, local server)", () => {
  it("sends every text in one request and returns the vectors in order", async () => {
    next = () => ({});
    const before = server.embeddingRequests.length;
    const texts = ["My sister Ana plays the violin", "I love jazz", "the bank"];
    const vectors = await openAIEmbedder(config()).embed(texts);
    expect(vectors).toEqual(texts.map((text) => hashedEmbedding(text)));
    expect(vectors[0]).toHaveLength(TEST_EMBEDDING_DIMS);
    expect(server.embeddingRequests.slice(before)).toEqual([
      { model: "embed-small", input: texts, encoding_format: "float" },
    ]);
  });

  it("asks for the configured dimensions, names itself by model and size, and makes no call for no text", async () => {
    next = () => ({});
    const embedder = openAIEmbedder(config({ dimensions: 16 }));
    expect(embedder.id).toBe("openai:embed-small@16");
    expect(embedder.model).toBe("embed-small");
    const before = server.embeddingRequests.length;
    expect(await embedder.embed([])).toEqual([]);
    expect(server.embeddingRequests.length).toBe(before);
    const [vector] = await embedder.embed(["hello there"]);
    expect(vector).toHaveLength(16);
    expect(server.embeddingRequests.at(-1)).toMatchObject({ dimensions: 16, input: ["hello there"] });
    expect(openAIEmbedder(config()).id).toBe("openai:embed-small");
  });

  it("maps a refused request onto an EmbeddingError (an LlmError) with its status", async () => {
    next = () => ({ status: 400 });
    const error = await failure(openAIEmbedder(config()).embed(["x"]));
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: "bad_request", status: 400, caller: "embeddings", name: "EmbeddingError" });
  });

  it("retries a 5xx as configured, then fails with server_error", async () => {
    next = () => ({ status: 503, headers: { "retry-after-ms": "1" } });
    const before = server.embeddingRequests.length;
    const error = await failure(openAIEmbedder(config({ maxRetries: 2 })).embed(["x"]));
    expect(error).toMatchObject({ code: "server_error", status: 503 });
    expect(server.embeddingRequests.length - before).toBe(3);
  });

  it("gives up at its deadline, and on the caller's abort", async () => {
    next = () => ({ hang: true });
    const started = performance.now();
    const timeout = await failure(openAIEmbedder(config({ timeoutMs: 200 })).embed(["x"]));
    expect(timeout.code).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(3_000);
    const controller = new AbortController();
    const call = openAIEmbedder(config()).embed(["x"], controller.signal);
    controller.abort();
    expect((await failure(call)).code).toBe("aborted");
  });

  it.each([
    ["too few vectors", () => ({ vectors: [[1, 0]] }), /asked for 2 vectors, got 1/],
    ["vectors of two sizes", () => ({ vectors: [[1, 0], [1]] }), /vector 1 has 1 dimensions, expected 2/],
    ["an empty vector", () => ({ vectors: [[], []] }), /vector 0 is not a non-empty list/],
  ])("refuses an answer with %s (invalid_output)", async (_label, reply, message) => {
    next = reply;
    const error = await failure(openAIEmbedder(config()).embed(["a", "b"]));
    expect(error.code).toBe("invalid_output");
    expect(error.message).toMatch(message);
  });

  it("refuses vectors of another size than the configured dimensions", async () => {
    next = (input) => ({ vectors: input.map(() => [0.6, 0.8]) });
    const error = await failure(openAIEmbedder(config({ dimensions: 3 })).embed(["a"]));
    expect(error).toMatchObject({
      code: "invalid_output",
      message: "embeddings: vector 0 has 2 dimensions, expected 3",
    });
  });
});

describe("offlineEmbedder", () => {
  it("is deterministic: offlineEmbedding of each text, whatever the batch", async () => {
    const embedder = offlineEmbedder();
    expect(embedder).toMatchObject({ id: "offline:64", model: OFFLINE_EMBEDDING_MODEL });
    const texts = ["I can't sleep after my night shift", "works night shifts", "loves jazz"];
    const once = await embedder.embed(texts);
    expect(once).toEqual(texts.map((text) => offlineEmbedding(text)));
    expect(await embedder.embed([...texts].reverse())).toEqual([...once].reverse());
    // Not semantic, but texts sharing topics are closer than texts that share none.
    expect(cosine(once[0]!, once[1]!)).toBeGreaterThan(cosine(once[0]!, once[2]!));
  });

  it("takes its size, and refuses one that is not a positive integer", async () => {
    const embedder = offlineEmbedder(8);
    expect(embedder.id).toBe("offline:8");
    expect((await embedder.embed(["jazz"]))[0]).toHaveLength(8);
    expect(() => offlineEmbedder(0)).toThrow(RangeError);
  });
});

describe("embeddingConfigFromEnv", () => {
  const llm = { CONCLAVE_LLM_BASE_URL: "http://127.0.0.1:11434/v1", CONCLAVE_LLM_MODEL: "qwen3:4b" };

  it("is null (no embeddings) when CONCLAVE_EMBEDDING_MODEL is unset or blank", () => {
    expect(embeddingConfigFromEnv({})).toBeNull();
    expect(embeddingConfigFromEnv({ ...llm, CONCLAVE_EMBEDDING_MODEL: "  " })).toBeNull();
    expect(createEmbedder(null)).toBeUndefined();
  });

  it("selects the offline embedder with `offline`, no server needed", () => {
    const config = embeddingConfigFromEnv({ CONCLAVE_EMBEDDING_MODEL: "offline" });
    expect(config).toEqual({ kind: "offline", dims: 64 });
    expect(createEmbedder(config)?.id).toBe("offline:64");
  });

  it("takes the LLM's server, key and retries, with a short default deadline", () => {
    expect(
      embeddingConfigFromEnv({
        ...llm,
        CONCLAVE_LLM_API_KEY: "sk-x",
        CONCLAVE_LLM_MAX_RETRIES: "1",
        CONCLAVE_EMBEDDING_MODEL: "nomic-embed-text",
      }),
    ).toEqual({
      kind: "openai",
      baseURL: "http://127.0.0.1:11434/v1",
      apiKey: "sk-x",
      model: "nomic-embed-text",
      timeoutMs: 2_000,
      maxRetries: 1,
    });
    expect(
      embeddingConfigFromEnv({
        ...llm,
        CONCLAVE_EMBEDDING_MODEL: "text-embedding-3-large",
        CONCLAVE_EMBEDDING_TIMEOUT_MS: "750",
        CONCLAVE_EMBEDDING_DIMENSIONS: "1024",
      }),
    ).toMatchObject({ timeoutMs: 750, dimensions: 1024 });
  });

  it("takes the server from the LLM settings it is given, and needs one for a model", () => {
    const given = { baseURL: "http://llm.internal/v1", apiKey: "k", model: "m", timeoutMs: 1, maxRetries: 0 };
    expect(embeddingConfigFromEnv({ CONCLAVE_EMBEDDING_MODEL: "e5" }, given)).toMatchObject({
      baseURL: "http://llm.internal/v1",
      apiKey: "k",
      model: "e5",
    });
    for (const read of [
      () => embeddingConfigFromEnv({ CONCLAVE_EMBEDDING_MODEL: "e5" }),
      () => embeddingConfigFromEnv({ ...llm, CONCLAVE_EMBEDDING_MODEL: "e5" }, null),
    ]) {
      expect(read).toThrow(EmbeddingConfigError);
      expect(read).toThrow(/CONCLAVE_EMBEDDING_MODEL="e5" needs CONCLAVE_LLM_BASE_URL/);
    }
  });

  it.each([
    ["CONCLAVE_EMBEDDING_MODEL", "text embedding"],
    ["CONCLAVE_EMBEDDING_TIMEOUT_MS", "soon"],
    ["CONCLAVE_EMBEDDING_TIMEOUT_MS", "0"],
    ["CONCLAVE_EMBEDDING_DIMENSIONS", "0"],
    ["CONCLAVE_EMBEDDING_DIMENSIONS", "3072"],
    ["CONCLAVE_EMBEDDING_DIMENSIONS", "12.5"],
  ])("rejects %s=%s with one line naming the variable", (name, value) => {
    const env = { ...llm, CONCLAVE_EMBEDDING_MODEL: "e5", [name]: value };
    const error = (() => {
      try {
        embeddingConfigFromEnv(env);
      } catch (caught) {
        return caught;
      }
      return expect.fail("expected a config error");
    })();
    expect(error).toBeInstanceOf(EmbeddingConfigError);
    expect(error).toMatchObject({ code: "config", name: "EmbeddingConfigError" });
    expect((error as Error).message).toContain(`${name}=${JSON.stringify(value)} is invalid`);
    expect((error as Error).message).not.toContain("\n");
  });

  it("gives a config whose embedder reaches the server's /embeddings", async () => {
    next = () => ({});
    const embedder = createEmbedder(
      embeddingConfigFromEnv({
        CONCLAVE_LLM_BASE_URL: server.url,
        CONCLAVE_LLM_MODEL: "chat",
        CONCLAVE_EMBEDDING_MODEL: "embed-env",
      }),
    );
    expect(embedder?.id).toBe("openai:embed-env");
    expect(await embedder?.embed(["from the environment"])).toEqual([hashedEmbedding("from the environment")]);
    expect(server.embeddingRequests.at(-1)).toMatchObject({ model: "embed-env" });
  });
});

import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { Usage } from "../../src/contracts/model.ts";

/** A tool call as the client sends it back in an assistant message. */
export interface RequestToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A message of a request; tool-calling rounds add assistant messages with calls and `tool` messages. */
export type RequestMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: RequestToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A chat completions request body as the server received it (only the fields tests look at are typed). */
export interface ChatRequestBody {
  model: string;
  messages: RequestMessage[];
  /** The tools offered, as sent: `{ type: "function", function: { name, description, parameters } }`. */
  tools?: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  response_format?: { type: string; json_schema?: { name: string; strict?: boolean; schema: unknown } };
  max_tokens?: number;
  [field: string]: unknown;
}

/** A successful answer: a chat.completion, or SSE chunks when the request streams. */
export interface ContentReply {
  content: string;
  /** Thinking text, sent before the content. */
  reasoning?: string;
  /** Which delta/message field carries `reasoning`: servers differ. Default "reasoning_content". */
  reasoningField?: "reasoning_content" | "reasoning";
  /** Usage to report; `null` sends none. Default: a rough count (4 characters a token). */
  usage?: Usage | null;
  /** Wait before answering, to simulate model latency. */
  delayMs?: number;
  /** Wait between SSE chunks when streaming, to simulate token rate. */
  chunkDelayMs?: number;
}

/**
 * A non-streaming answer asking for tool calls (`message.tool_calls`, `finish_reason: "tool_calls"`).
 * A streaming request answered with it fails with a 500: streamed tool calls are not scripted.
 */
export interface ToolCallsReply {
  /** `arguments` is sent as is, so a test can send text that is not JSON. `id` defaults to `call_<index>`. */
  toolCalls: { id?: string; name: string; arguments: string }[];
  /** Text beside the calls; default none (`content: null`). */
  content?: string;
  /** Usage to report; `null` sends none. Default: a rough count (4 characters a token). */
  usage?: Usage | null;
}

/** An HTTP error; `body` defaults to an OpenAI-style `{ error: { message, type } }`. */
export interface ErrorReply {
  status: number;
  body?: unknown;
  /**
   * The default body's message quotes the request's Authorization header and the key in it, as
   * some OpenAI-compatible servers and proxies do (`Incorrect API key provided: …`).
   */
  echoAuthorization?: true;
  /** E.g. `{ "retry-after-ms": "10" }` to make the client's retry quick. */
  headers?: Record<string, string>;
}

/** Never answers; `stop()` still closes the connection. */
export interface HangReply {
  hang: true;
}

export type ScriptedReply = ContentReply | ToolCallsReply | ErrorReply | HangReply;

export type ReplyHandler = (body: ChatRequestBody, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface OpenAIServer {
  /** Base URL ending in /v1, for `new OpenAI({ baseURL })`. */
  url: string;
  /** Bodies of the chat completion requests received, in order. */
  requests: ChatRequestBody[];
  /** Bodies of the embeddings requests received (POST /v1/embeddings), in order. */
  embeddingRequests: EmbeddingRequestBody[];
  /** The usage each answered call reported (chat completions and embeddings), with the model asked, in order. */
  served: ServedUsage[];
  /** Requests received (any route) whose connection is still open and that are not answered yet. */
  readonly openRequests: number;
  /** Resolves with the first chat request received that `match`es (one received before included). */
  received(match: (body: ChatRequestBody) => boolean): Promise<ChatRequestBody>;
  /**
   * Resolves when the first chat request that `match`es has closed (already closed included): `aborted`
   * when the client closed it before the server answered (a hang the client gave up on).
   */
  closed(match: (body: ChatRequestBody) => boolean): Promise<{ aborted: boolean }>;
  stop(): Promise<void>;
}

/** The tokens one answered call reported: what the client is told it used. */
export interface ServedUsage {
  route: "chat" | "embeddings";
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
}

/** An embeddings request body as the server received it. */
export interface EmbeddingRequestBody {
  model: string;
  input: string | string[];
  encoding_format?: "float" | "base64";
  dimensions?: number;
  [field: string]: unknown;
}

/**
 * How the server answers an embeddings request: `{}` for the default vectors
 * ({@link hashedEmbedding} of each input, `dimensions` long, default {@link TEST_EMBEDDING_DIMS}),
 * `vectors` to send those instead (as given, even if wrong), or an error or a hang.
 */
export type EmbeddingReply = EmbeddingVectorsReply | ErrorReply | HangReply;

/** Vectors: the default ones, or `vectors`, after `delayMs`. */
export interface EmbeddingVectorsReply {
  vectors?: number[][];
  delayMs?: number;
}

export type EmbeddingHandler = (body: EmbeddingRequestBody, index: number) => EmbeddingReply | Promise<EmbeddingReply>;

/** Options of {@link startOpenAIServer}. */
export interface OpenAIServerOptions {
  /** How POST /v1/embeddings answers. Default: the hashed vectors, always. */
  embeddings?: EmbeddingHandler;
}

/** The size of {@link hashedEmbedding}'s vectors when a request names none. */
export const TEST_EMBEDDING_DIMS = 128;

/**
 * The test server's deterministic embedding: a bag of the text's lowercased words (runs of
 * letters and digits), each adding 1 at a hashed index (FNV-1a), scaled to length 1 (all zeros
 * for a text without words). Texts sharing more words are closer: enough to test ranking by it.
 */
export function hashedEmbedding(text: string, dims: number = TEST_EMBEDDING_DIMS): number[] {
  const vector = new Array<number>(dims).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193);
    const at = (hash >>> 0) % dims;
    vector[at] = (vector[at] ?? 0) + 1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((value) => value / norm);
}

/** Replies from a list, one per request in order; the last one repeats. */
export function scripted(...replies: ScriptedReply[]): ReplyHandler {
  return (_body, index) => {
    const reply = replies[Math.min(index, replies.length - 1)];
    if (!reply) throw new Error("scripted() needs at least one reply");
    return reply;
  };
}

/**
 * A local OpenAI-compatible server (POST /v1/chat/completions, POST /v1/embeddings) on 127.0.0.1
 * and a free port, answering what `handler` scripts (and `options.embeddings`). Built on node:http
 * so the real `openai` client is exercised end to end: HTTP status handling, retries, SSE parsing.
 */
export async function startOpenAIServer(
  handler: ReplyHandler,
  options: OpenAIServerOptions = {},
): Promise<OpenAIServer> {
  const requests: ChatRequestBody[] = [];
  const embeddingRequests: EmbeddingRequestBody[] = [];
  const served: ServedUsage[] = [];
  const tracked = new RequestTracker();
  const server = createServer((req, res) => {
    tracked.opened(res);
    answer(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, errorBody(String(error), "server_error"));
      else res.destroy();
    });
  });

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "POST" && req.url === "/v1/embeddings") return answerEmbeddings(req, res);
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      sendJson(res, 404, errorBody(`no route ${req.method} ${req.url}`, "invalid_request_error"));
      return;
    }
    let body: ChatRequestBody;
    try {
      body = JSON.parse(await readBody(req)) as ChatRequestBody;
    } catch {
      sendJson(res, 400, errorBody("request body is not JSON", "invalid_request_error"));
      return;
    }
    const index = requests.push(body) - 1;
    tracked.chat(body, res);
    const reply = await handler(body, index);
    if ("hang" in reply) return; // left open until the client gives up or stop() closes it
    if ("status" in reply) {
      sendJson(res, reply.status, reply.body ?? errorBodyOf(reply, req), reply.headers);
      return;
    }
    const usage = usageOf(body, reply);
    // A stream reports its usage only when asked to (stream_options.include_usage).
    if (usage && (!body.stream || body.stream_options?.include_usage))
      served.push({
        route: "chat",
        model: body.model,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
      });
    if ("toolCalls" in reply) {
      if (body.stream) throw new Error("streamed tool calls are not scripted");
      sendJson(res, 200, toolCallsCompletion(body, reply));
      return;
    }
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return; // the client gave up while we waited
    if (body.stream) await sendStream(res, body, reply);
    else sendJson(res, 200, completion(body, reply));
  }

  async function answerEmbeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: EmbeddingRequestBody;
    try {
      body = JSON.parse(await readBody(req)) as EmbeddingRequestBody;
    } catch {
      sendJson(res, 400, errorBody("request body is not JSON", "invalid_request_error"));
      return;
    }
    const index = embeddingRequests.push(body) - 1;
    const reply = await (options.embeddings ?? (() => ({})))(body, index);
    if ("hang" in reply) return;
    if ("status" in reply) {
      const error = reply as ErrorReply;
      sendJson(res, error.status, error.body ?? errorBodyOf(error, req), error.headers);
      return;
    }
    const scripted = reply as EmbeddingVectorsReply;
    if (scripted.delayMs) await sleep(scripted.delayMs);
    if (res.destroyed) return;
    const inputs = typeof body.input === "string" ? [body.input] : body.input;
    const vectors =
      scripted.vectors ?? inputs.map((text) => hashedEmbedding(text, body.dimensions ?? TEST_EMBEDDING_DIMS));
    const tokens = inputs.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0);
    served.push({ route: "embeddings", model: body.model, prompt_tokens: tokens, completion_tokens: 0 });
    sendJson(res, 200, {
      object: "list",
      data: vectors.map((vector, at) => ({
        object: "embedding",
        index: at,
        // What the openai client asks for when the caller names no format: little-endian float32, base64.
        embedding:
          body.encoding_format === "base64" ? Buffer.from(new Float32Array(vector).buffer).toString("base64") : vector,
      })),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    embeddingRequests,
    served,
    get openRequests() {
      return tracked.open;
    },
    received: (match) => tracked.received(match),
    closed: (match) => tracked.closed(match),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // hanging requests and keep-alive sockets
      }),
  };
}

/** The server's requests as they arrive and close, for tests that wait on a hung call's end. */
interface TrackedChat {
  body: ChatRequestBody;
  closed: Promise<{ aborted: boolean }>;
}

class RequestTracker {
  open = 0;
  readonly #chats: TrackedChat[] = [];
  readonly #events = new EventEmitter();

  opened(res: ServerResponse): void {
    this.open += 1;
    res.once("close", () => {
      this.open -= 1;
    });
  }

  chat(body: ChatRequestBody, res: ServerResponse): void {
    const closed = new Promise<{ aborted: boolean }>((resolve) => {
      const done = () => resolve({ aborted: !res.writableFinished });
      if (res.closed) done();
      else res.once("close", done);
    });
    this.#chats.push({ body, closed });
    this.#events.emit("chat");
  }

  async received(match: (body: ChatRequestBody) => boolean): Promise<ChatRequestBody> {
    return (await this.#first(match)).body;
  }

  async closed(match: (body: ChatRequestBody) => boolean): Promise<{ aborted: boolean }> {
    return (await this.#first(match)).closed;
  }

  #first(match: (body: ChatRequestBody) => boolean): Promise<TrackedChat> {
    return new Promise((resolve) => {
      const look = () => {
        const found = this.#chats.find((chat) => match(chat.body));
        if (!found) return false;
        this.#events.off("chat", look);
        resolve(found);
        return true;
      };
      if (!look()) this.#events.on("chat", look);
    });
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function errorBody(message: string, type: string) {
  return { error: { message, type, code: null, param: null } };
}

/** The default body of a scripted error: its status, and the credentials sent when it echoes them. */
function errorBodyOf(reply: ErrorReply, req: IncomingMessage) {
  if (!reply.echoAuthorization) return errorBody(`scripted ${reply.status}`, "server_error");
  const authorization = req.headers.authorization ?? "";
  const key = authorization.replace(/^Bearer\s+/i, "");
  return errorBody(
    `Incorrect API key provided: ${key}. Request header was "Authorization: ${authorization}"`,
    "invalid_request_error",
  );
}

function usageOf(body: ChatRequestBody, reply: ContentReply | ToolCallsReply): Usage | null {
  if (reply.usage !== undefined) return reply.usage;
  const promptChars = body.messages.reduce((sum, message) => sum + (message.content ?? "").length, 0);
  const completionChars =
    "toolCalls" in reply
      ? (reply.content?.length ?? 0) + reply.toolCalls.reduce((sum, call) => sum + call.arguments.length, 0)
      : reply.content.length + (reply.reasoning?.length ?? 0);
  return { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: Math.ceil(completionChars / 4) };
}

function withTotal(usage: Usage) {
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

function completion(body: ChatRequestBody, reply: ContentReply) {
  const message: Record<string, unknown> = { role: "assistant", content: reply.content, refusal: null };
  if (reply.reasoning) message[reply.reasoningField ?? "reasoning_content"] = reply.reasoning;
  return chatCompletion(body, message, "stop", usageOf(body, reply));
}

function toolCallsCompletion(body: ChatRequestBody, reply: ToolCallsReply) {
  const message = {
    role: "assistant",
    content: reply.content ?? null,
    refusal: null,
    tool_calls: reply.toolCalls.map((call, index) => ({
      id: call.id ?? `call_${index}`,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    })),
  };
  return chatCompletion(body, message, "tool_calls", usageOf(body, reply));
}

function chatCompletion(body: ChatRequestBody, message: unknown, finishReason: string, usage: Usage | null) {
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
    ...(usage ? { usage: withTotal(usage) } : {}),
  };
}

/** Text cut into small deltas, as a model emits tokens. */
function deltas(text: string, size = 5): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

async function sendStream(res: ServerResponse, body: ChatRequestBody, reply: ContentReply): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created,
    model: body.model,
    choices,
    ...extra,
  });
  const events: unknown[] = [chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }])];
  const reasoningField = reply.reasoningField ?? "reasoning_content";
  for (const piece of deltas(reply.reasoning ?? "")) {
    events.push(chunk([{ index: 0, delta: { [reasoningField]: piece }, finish_reason: null }]));
  }
  for (const piece of deltas(reply.content)) {
    events.push(chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]));
  }
  events.push(chunk([{ index: 0, delta: {}, finish_reason: "stop" }]));
  const usage = usageOf(body, reply);
  if (body.stream_options?.include_usage && usage) events.push(chunk([], { usage: withTotal(usage) }));

  for (const event of events) {
    if (res.destroyed) return;
    res.write(`data: ${JSON.stringify(event)}\n\n`);
    if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
  }
  res.end("data: [DONE]\n\n");
}

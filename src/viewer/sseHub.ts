import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Server-Sent Events to every open page. A page that stops reading (more
 * than `maxBuffered` bytes waiting) is dropped rather than let memory grow.
 */
export class SseHub {
  readonly #clients = new Set<ServerResponse>();
  readonly #keepAlive: NodeJS.Timeout;
  readonly #maxBuffered: number;

  constructor(keepAliveMs = 15_000, maxBuffered = 4 * 1024 * 1024) {
    this.#maxBuffered = maxBuffered;
    // A comment line now and then keeps proxies and idle timeouts from closing the stream.
    this.#keepAlive = setInterval(() => this.#writeAll(": keep-alive\n\n"), keepAliveMs);
    this.#keepAlive.unref();
  }

  get size(): number {
    return this.#clients.size;
  }

  /** Opens the stream for one page and sends it `replay` (what it missed) first. */
  attach(request: IncomingMessage, response: ServerResponse, replay: { event: string; data: unknown }[]): void {
    response.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    response.write("retry: 1000\n\n");
    for (const { event, data } of replay) response.write(frame(event, data));
    this.#clients.add(response);
    const detach = () => this.#clients.delete(response);
    request.once("close", detach);
    response.once("error", detach);
  }

  send(event: string, data: unknown): void {
    this.#writeAll(frame(event, data));
  }

  close(): void {
    clearInterval(this.#keepAlive);
    for (const client of this.#clients) client.end();
    this.#clients.clear();
  }

  #writeAll(text: string): void {
    for (const client of this.#clients) {
      if (client.writableLength > this.#maxBuffered) {
        this.#clients.delete(client);
        client.destroy();
        continue;
      }
      client.write(text);
    }
  }
}

// JSON.stringify never emits a raw newline, so one `data:` line holds the whole message.
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A minimal OTLP/HTTP receiver for the bench's tracing phase: accepts
 * `POST /v1/traces` (JSON, as `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` sends it),
 * answers 200 `{}` and only counts the spans, by service. A protobuf body is
 * counted as a request with unknown spans (the bench asks for JSON).
 */
export interface OtlpSink {
  /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  /** Spans received so far. */
  spans(): number;
  /** Spans received so far, by `service.name`. */
  spansByService(): Record<string, number>;
  /** Export requests received, and those whose body could not be read as OTLP JSON. */
  requests(): { total: number; unreadable: number };
  /** Resolves once no span has arrived for `quietMs` (or at `deadlineMs`): the exporters have flushed. */
  settled(quietMs: number, deadlineMs: number): Promise<void>;
  stop(): Promise<void>;
}

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: { key?: string; value?: { stringValue?: string } }[] };
    scopeSpans?: { spans?: unknown[] }[];
  }[];
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const byService = new Map<string, number>();
  let total = 0;
  let requests = 0;
  let unreadable = 0;
  let lastSpanAt = performance.now();

  const count = (body: string) => {
    const parsed = JSON.parse(body) as OtlpJson;
    for (const resource of parsed.resourceSpans ?? []) {
      const service =
        resource.resource?.attributes?.find((a) => a.key === "service.name")?.value?.stringValue ?? "unknown";
      const spans = (resource.scopeSpans ?? []).reduce((sum, scope) => sum + (scope.spans?.length ?? 0), 0);
      byService.set(service, (byService.get(service) ?? 0) + spans);
      total += spans;
    }
    lastSpanAt = performance.now();
  };

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.method === "POST" && request.url?.split("?")[0] === "/v1/traces") {
        requests++;
        try {
          count(Buffer.concat(chunks).toString("utf8"));
        } catch {
          unreadable++;
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else {
        response.writeHead(404, { "content-type": "application/json" }).end("{}");
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => total,
    spansByService: () => Object.fromEntries(byService),
    requests: () => ({ total: requests, unreadable }),
    settled: async (quietMs, deadlineMs) => {
      const deadline = performance.now() + deadlineMs;
      while (performance.now() < deadline && performance.now() - lastSpanAt < quietMs) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll } from "vitest";

/** One span as an OTLP/HTTP JSON export carried it, flattened: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string }[];
}
interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

const plainValue = (value: OtlpValue): unknown =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue));

const attributesOf = (list: OtlpAttribute[] = []): Record<string, unknown> =>
  Object.fromEntries(list.map(({ key, value }) => [key, plainValue(value)]));

/** Ids come in hex (the JS exporter's JSON) or base64 (protobuf's JSON mapping): hex either way. */
const hexId = (id: string | undefined): string => {
  if (!id) return "";
  return /^[0-9a-f]+$/i.test(id) && (id.length === 16 || id.length === 32)
    ? id.toLowerCase()
    : Buffer.from(id, "base64").toString("hex");
};

/** The spans of one OTLP/HTTP JSON export request. */
export function spansOfExport(body: OtlpExport): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          service,
          traceId: hexId(span.traceId),
          spanId: hexId(span.spanId),
          parentSpanId: hexId(span.parentSpanId),
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map((link) => ({ traceId: hexId(link.traceId), spanId: hexId(link.spanId) })),
        });
      }
    }
  }
  return spans;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers["content-encoding"] === "gzip" ? gunzipSync(body) : body;
}

/**
 * A small OTLP/HTTP receiver (JSON bodies on `POST /v1/traces`) on a free
 * port, for the current test file: what the processes under test export.
 */
export function useOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const problems: string[] = [];
  let server: Server | undefined;
  let url = "";
  beforeAll(async () => {
    server = createServer((request, response) => {
      void bodyOf(request).then(
        (body) => {
          if (request.method !== "POST" || request.url !== "/v1/traces") {
            problems.push(`${request.method} ${request.url}`);
            response.writeHead(404).end();
            return;
          }
          try {
            bodies.push(body.toString("utf8"));
            spans.push(...spansOfExport(JSON.parse(body.toString("utf8")) as OtlpExport));
            response.writeHead(200, { "content-type": "application/json" }).end("{}");
          } catch (error) {
            problems.push(`unreadable export: ${String(error)}`);
            response.writeHead(400).end();
          }
        },
        () => response.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });
  return {
    /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
    get url(): string {
      return url;
    },
    /** Every span received so far. */
    spans,
    /** Every export's JSON body as received (status messages and exception events included). */
    bodies,
    /** Requests it could not take (wrong path, unreadable body). */
    problems,
  };
}

import { headers } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { FORMAT_HEADERS, withFormatHeader } from "../../src/bus/wire.ts";
import { FORMAT_HEADER, FORMAT_VERSION } from "../../src/contracts/format.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const encoded = (h: unknown) => text((h as { encode(): Uint8Array }).encode());

describe("wire", () => {
  it("shares headers that are encoded once and refuse changes", () => {
    expect(FORMAT_HEADERS.get(FORMAT_HEADER)).toBe(String(FORMAT_VERSION));
    expect(encoded(FORMAT_HEADERS)).toBe(`NATS/1.0\r\n${FORMAT_HEADER}: ${FORMAT_VERSION}\r\n\r\n`);
    expect(() => FORMAT_HEADERS.set("X-Other", "1")).toThrow(/shared/);
    expect(() => FORMAT_HEADERS.append("X-Other", "1")).toThrow(/shared/);
    expect(() => FORMAT_HEADERS.delete(FORMAT_HEADER)).toThrow(/shared/);
    expect(encoded(FORMAT_HEADERS)).toBe(`NATS/1.0\r\n${FORMAT_HEADER}: ${FORMAT_VERSION}\r\n\r\n`);
  });

  it("adds the format header to a message's own headers", () => {
    const own = headers();
    own.set("Nats-Msg-Id", "m-1");
    const sent = withFormatHeader(own);
    expect(sent).toBe(own);
    expect(encoded(sent)).toContain(`${FORMAT_HEADER}: ${FORMAT_VERSION}`);
    expect(encoded(sent)).toContain("Nats-Msg-Id: m-1");
  });

  it("encodes JSON as its UTF-8 text, and nothing for undefined", () => {
    expect(text(encodeJson({ a: "é😀", n: 1 }))).toBe('{"a":"é😀","n":1}');
    expect(encodeJson(undefined)).toHaveLength(0);
  });
});

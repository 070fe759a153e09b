import { describe, expect, it } from "vitest";
import { fnv1a, partitionOf } from "../../src/contracts/partitions.ts";

/** FNV-1a over TextEncoder's bytes: the protocol's definition (docs/protocol.md), written the plain way. */
function reference(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

describe("fnv1a", () => {
  it("gives the published FNV-1a values", () => {
    expect(fnv1a("")).toBe(0x811c9dc5);
    expect(fnv1a("a")).toBe(0xe40c292c);
    expect(fnv1a("foobar")).toBe(0xbf9cf968);
  });

  it("hashes the UTF-8 bytes TextEncoder makes, lone surrogates included", () => {
    const texts = [
      "session-1",
      "é",
      "ߺ", // the last two-byte code point
      "ࠀ",
      "会话-42",
      "😀 turn",
      "\u{10ffff}",
      "\ud800", // a lone high surrogate
      "x\udc00y", // a lone low surrogate
      "\ud83d", // a high surrogate at the end
      "\ud83d\ud83d\ude00", // a high surrogate followed by a pair
    ];
    for (const text of texts) expect(fnv1a(text), JSON.stringify(text)).toBe(reference(text));
    expect(partitionOf("会话-42", 16)).toBe(reference("会话-42") % 16);
  });
});

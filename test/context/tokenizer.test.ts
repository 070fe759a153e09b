import { describe, expect, it } from "vitest";
import { APPROXIMATE_ENCODING, approximateTokenizer, encodingFor, tokenizerFor } from "../../src/context/tokenizer.ts";

describe("context tokenizer", () => {
  it("counts with the model's own encoding: known tiktoken values", () => {
    const o200k = tokenizerFor("gpt-4o");
    const cl100k = tokenizerFor("gpt-4");
    expect([o200k.encoding, cl100k.encoding]).toEqual(["o200k_base", "cl100k_base"]);
    // tiktoken: "hello world" is [24912, 2375] in o200k_base and [15339, 1917] in cl100k_base.
    expect(o200k.count("hello world")).toBe(2);
    expect(cl100k.count("hello world")).toBe(2);
    expect(o200k.count("Hello, world!")).toBe(4);
    expect(cl100k.count("The quick brown fox jumps over the lazy dog.")).toBe(10);
    expect(cl100k.count("")).toBe(0);
  });

  it("maps model families to encodings, and approximates unknown models with cl100k_base", () => {
    expect(encodingFor("gpt-4.1-mini")).toEqual({ encoding: "o200k_base", exact: true });
    expect(encodingFor("openai/gpt-5")).toEqual({ encoding: "o200k_base", exact: true });
    expect(encodingFor("o3-mini")).toEqual({ encoding: "o200k_base", exact: true });
    expect(encodingFor("gpt-3.5-turbo")).toEqual({ encoding: "cl100k_base", exact: true });
    expect(encodingFor("llama3.1:8b")).toEqual({ encoding: APPROXIMATE_ENCODING, exact: false });
    expect(encodingFor(undefined)).toEqual({ encoding: APPROXIMATE_ENCODING, exact: false });
  });

  it("counts special-token text as ordinary text, and truncates to a token count", () => {
    const tokenizer = tokenizerFor("gpt-4o");
    expect(tokenizer.count("<|endoftext|>")).toBeGreaterThan(1);
    const long = "one two three four five six seven eight nine ten";
    const short = tokenizer.truncate(long, 3);
    expect(tokenizer.count(short)).toBeLessThanOrEqual(3);
    expect(long.startsWith(short)).toBe(true);
    expect(tokenizer.truncate("short", 10)).toBe("short");
  });

  it("without gpt-tokenizer (an optional peer), counts a token per four UTF-8 bytes and cuts on a character", () => {
    expect(approximateTokenizer).toMatchObject({ encoding: "utf8_bytes/4", exact: false });
    expect(approximateTokenizer.count("hello world!")).toBe(3);
    expect(approximateTokenizer.count("é")).toBe(1);
    expect(approximateTokenizer.truncate("abcdefgh", 1)).toBe("abcd");
    expect(approximateTokenizer.truncate("ééé", 1)).toBe("éé");
    expect(approximateTokenizer.truncate("short", 10)).toBe("short");
  });
});

import { describe, expect, it } from "vitest";
import {
  type InterceptorContext,
  piiRedaction,
  type ResponseInterceptor,
  screenPacket,
} from "../../../src/runtime/interception/interceptors.ts";
import { redactPii } from "../../../src/runtime/interception/pii.ts";
import { StreamScreen } from "../../../src/runtime/interception/streamScreen.ts";

const context: InterceptorContext = { request_id: "s.1", start_time: 0, session_id: "s", turn_id: 1 };

const RAW = [
  "alice@example.com",
  "+1 415 555 0100",
  "4111 1111 1111 1111",
  "4111-1111-1111-1111",
  "415 555",
  "1111 1111",
];

/** Texts with personal data amid multi-byte characters (accents, CJK, emoji made of two UTF-16 units). */
const TEXTS = [
  "Écris à alice@example.com, s'il te plaît 😊",
  "日本から +1 415 555 0100 に電話して 🎉",
  "Carte 4111 1111 1111 1111 — merci ✨",
  "mail alice@example.com, call +1 415 555 0100, card 4111-1111-1111-1111.",
  "😊alice@example.com😊+1 415 555 0100😊",
  "alice@example.com",
  "+1 415 555 0100",
  // A character that could start more personal data right after a complete match.
  "alice@example.com+1 415 555 0100é",
  "(alice@example.com+1 415 555 0100",
  "Écrire à 1alice@example.com+ ou x4111 1111 1111 1111😊",
];

/** Screens `pieces` as one stream; returns every released text, in order. */
function stream(pieces: string[]): string[] {
  const screen = new StreamScreen([piiRedaction], "default", context);
  const out = pieces.map((piece) => screen.push(piece).text ?? "");
  out.push(screen.flush().text ?? "");
  return out;
}

const isHighSurrogate = (text: string) => text.length > 0 && /[\uD800-\uDBFF]$/.test(text);

describe("a stream screened for personal data", () => {
  it("redacts a match split at every possible point into two packets, exactly as the whole text", () => {
    for (const text of TEXTS) {
      const whole = redactPii(text).text;
      for (let cut = 0; cut <= text.length; cut++) {
        const released = stream([text.slice(0, cut), text.slice(cut)]);
        const joined = released.join("");
        expect(joined, `${JSON.stringify(text)} cut at ${cut}`).toBe(whole);
        for (const raw of RAW) expect(joined.includes(raw), `${raw} leaked`).toBe(false);
        for (const piece of released) expect(isHighSurrogate(piece), "a packet ends inside an emoji").toBe(false);
      }
    }
  });

  it("redacts across every pair of split points (three packets)", () => {
    const text = TEXTS[3]!;
    const whole = redactPii(text).text;
    for (let first = 0; first <= text.length; first++) {
      for (let second = first; second <= text.length; second++) {
        const released = stream([text.slice(0, first), text.slice(first, second), text.slice(second)]);
        expect(released.join(""), `cut at ${first} and ${second}`).toBe(whole);
      }
    }
  });

  it("redacts text streamed in five-character packets and one character at a time", () => {
    for (const text of TEXTS) {
      for (const size of [1, 5]) {
        const pieces = Array.from({ length: Math.ceil(text.length / size) }, (_, i) =>
          text.slice(i * size, i * size + size),
        );
        expect(stream(pieces).join("")).toBe(redactPii(text).text);
      }
    }
  });

  it("redacts random texts split at random points exactly as the whole text, through a chain of two", () => {
    const atoms = ["alice@example.com", "+1 415 555 0100", "4111-1111-1111-1111", " ", "x", "é", "😊", "日本", "1"];
    const punctuation = ["-", ".", "@", "(", ")", "+", ",", "secret"];
    // A second interceptor that also holds back a trailing word: each sees the stream whole.
    const secret: ResponseInterceptor = {
      name: "secret",
      onPacket: ({ delta }) =>
        delta.includes("secret")
          ? { action: "redact", text: delta.replaceAll("secret", "[secret]"), reason: "secret" }
          : { action: "pass" },
      holdBack: (text) => /\w*$/.exec(text)?.[0].length ?? 0,
    };
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pool = [...atoms, ...punctuation];
    for (let round = 0; round < 3000; round++) {
      const text = Array.from({ length: 1 + random(7) }, () => pool[random(pool.length)]!).join("");
      const chain = round % 2 === 0 ? [piiRedaction] : [piiRedaction, secret];
      const cuts = Array.from({ length: random(5) }, () => random(text.length + 1)).sort((a, b) => a - b);
      const pieces = [0, ...cuts].map((from, index) => text.slice(from, [...cuts, text.length][index]));
      const screen = new StreamScreen(chain, "default", context);
      const joined = pieces.map((piece) => screen.push(piece).text).join("") + screen.flush().text;
      const whole = screenPacket(chain, { stream_id: "default", delta: text }, context).delta;
      expect(joined, `${JSON.stringify(pieces)} through ${chain.length}`).toBe(whole);
    }
  });

  it("releases text that cannot become personal data at once, and holds back only what still could", () => {
    const screen = new StreamScreen([piiRedaction], "default", context);
    expect(screen.push("Hello there, call me at +1 415").text).toBe("Hello there, call me at ");
    expect(screen.push(" 555 0100 tonight").text).toBe("[phone] ");
    expect(screen.flush().text).toBe("tonight");
  });

  it("leaves long numbers that are no card numbers (Luhn) as numbers, or phone numbers", () => {
    expect(redactPii("order 4111 1111 1111 1112").text).toBe("order [phone]");
    expect(redactPii("card 4111111111111111").text).toBe("card [card]");
    expect(redactPii("it is 2026").text).toBe("it is 2026");
  });
});

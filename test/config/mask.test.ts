import { describe, expect, it } from "vitest";
import { MASKED, maskUrl, maskValue, userInfoPassword } from "../../src/config/mask.ts";

describe("maskValue", () => {
  it("hides a secret entirely and leaves other values as they are", () => {
    expect(maskValue("sk-123", "secret")).toBe(MASKED);
    expect(maskValue("/etc/conclave/runner.creds", undefined)).toBe("/etc/conclave/runner.creds");
  });

  it("hides the password of each URL in a list, and secret-looking query parameters", () => {
    expect(maskValue("nats://a:pw1@h1:4222, nats://b:pw2@h2:4222", "url")).toBe(
      "nats://a:****@h1:4222, nats://b:****@h2:4222",
    );
    expect(maskUrl("postgres://me@db/x")).toBe("postgres://me@db/x");
    expect(maskUrl("https://h/v1?api_key=abc&model=m")).toBe("https://h/v1?api_key=****&model=m");
    expect(maskUrl("not a url //me:pw@host")).toBe("not a url //me:****@host");
  });
});

/** Every character a URL percent-encodes in a password, and non-ASCII ones. */
const SPECIAL = [" ", "^", "{", "}", "|", ";", "=", "[", "]", '"', "<", ">", "@", "/", ":", "\\", "é", "密", "🔑"];

describe("maskUrl with a password the URL parser would encode or refuse", () => {
  for (const schema of ["nats", "postgres", "redis", "https"]) {
    it.each(SPECIAL)(`${schema}: hides a password holding %j, as written`, (character) => {
      const password = `pa${character}ss${character}word`;
      const url = `${schema}://me:${password}@db.example:4222/base?model=m`;
      const masked = maskUrl(url);
      expect(masked).toBe(`${schema}://me:${MASKED}@db.example:4222/base?model=m`);
      expect(masked).not.toContain("ss");
      expect(userInfoPassword(url)).toBe(password);
    });
  }

  it("hides a percent-encoded password and a secret parameter written encoded", () => {
    expect(maskUrl("redis://me:p%40ss%2Fw%C3%A9@cache:6379/0")).toBe("redis://me:****@cache:6379/0");
    expect(maskUrl("https://h/v1?model=m&api%5Fkey=a%20b%7Cc")).toBe("https://h/v1?model=m&api%5Fkey=****");
    expect(maskUrl("https://h/v1?token=a b|c#part")).toBe("https://h/v1?token=****#part");
  });

  it("leaves a URL without a password as it is, an @ in its path included", () => {
    expect(maskUrl("https://h.example/users/@me?model=m")).toBe("https://h.example/users/@me?model=m");
    expect(maskUrl("nats://127.0.0.1:4222")).toBe("nats://127.0.0.1:4222");
    expect(userInfoPassword("postgres://me@db/x")).toBeUndefined();
  });
});

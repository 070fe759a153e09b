import { describe, expect, it } from "vitest";
import { MASKED, maskUrl, maskValue } from "../../src/config/mask.ts";

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

import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { loadOpenAI } from "../../src/llm/openaiPackage.ts";
import { responseFormatFor } from "../../src/llm/responseFormat.ts";
import { Verdict } from "./fixtures.ts";

describe("responseFormatFor", () => {
  beforeAll(async () => {
    await loadOpenAI();
  });

  it("builds a strict json_schema with zodResponseFormat for a plain object schema", () => {
    expect(responseFormatFor(Verdict, "verdict")).toMatchObject({
      type: "json_schema",
      json_schema: { name: "verdict", strict: true, schema: { type: "object", additionalProperties: false } },
    });
  });

  it("falls back to a non-strict schema for what strict mode refuses (array root, records)", () => {
    expect(responseFormatFor(z.array(z.string()), "list").json_schema).toMatchObject({
      strict: false,
      schema: { type: "array", items: { type: "string" } },
    });
    expect(responseFormatFor(z.record(z.string(), z.number()), "scores").json_schema.strict).toBe(false);
  });

  it("builds each schema and name once", () => {
    expect(responseFormatFor(Verdict, "verdict")).toBe(responseFormatFor(Verdict, "verdict"));
    expect(responseFormatFor(Verdict, "other")).not.toBe(responseFormatFor(Verdict, "verdict"));
  });

  it("refuses names the API does not accept", () => {
    expect(() => responseFormatFor(Verdict, "has space")).toThrow(/schemaName/);
  });
});

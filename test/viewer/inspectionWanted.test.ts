import { describe, expect, it } from "vitest";
import { inspectionWanted } from "../../src/inspect/enable.ts";

describe("inspectionWanted", () => {
  it("is on with --inspect or CONCLAVE_INSPECT=1/true/yes, off otherwise", () => {
    expect(inspectionWanted(true, {})).toBe(true);
    expect(inspectionWanted(undefined, {})).toBe(false);
    for (const value of ["1", "true", "YES", " yes "])
      expect(inspectionWanted(undefined, { CONCLAVE_INSPECT: value })).toBe(true);
    for (const value of ["0", "", "no", "off"])
      expect(inspectionWanted(undefined, { CONCLAVE_INSPECT: value })).toBe(false);
  });
});

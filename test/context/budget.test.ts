import { describe, expect, it } from "vitest";
import {
  CompactionRequiredError,
  checkCompactionGate,
  contextBudgetFromEnv,
  DEFAULT_CONTEXT_BUDGET,
  pressureOf,
} from "../../src/context/budget.ts";
import { isConclaveError } from "../../src/errors.ts";

const budget = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 1_000 };

describe("context budget", () => {
  it("reads the budget and ratios from the environment, with defaults", () => {
    expect(contextBudgetFromEnv({})).toEqual(DEFAULT_CONTEXT_BUDGET);
    expect(
      contextBudgetFromEnv({
        CONCLAVE_CONTEXT_BUDGET_TOKENS: "4000",
        CONCLAVE_CONTEXT_COMPACT_RATIO: "0.7",
        CONCLAVE_CONTEXT_CRITICAL_RATIO: "0.9",
      }),
    ).toMatchObject({ total_tokens: 4_000, compact_ratio: 0.7, critical_ratio: 0.9 });
  });

  it("refuses bad ratios with a one-line config error", () => {
    expect(() => contextBudgetFromEnv({ CONCLAVE_CONTEXT_COMPACT_RATIO: "1.5" })).toThrow(
      /CONCLAVE_CONTEXT_COMPACT_RATIO/,
    );
    expect(() =>
      contextBudgetFromEnv({ CONCLAVE_CONTEXT_COMPACT_RATIO: "0.9", CONCLAVE_CONTEXT_CRITICAL_RATIO: "0.8" }),
    ).toThrow("CONCLAVE_CONTEXT_COMPACT_RATIO (0.9) must be below CONCLAVE_CONTEXT_CRITICAL_RATIO (0.8)");
  });

  it("gives the pressure level of a usage from the configured ratios", () => {
    expect(pressureOf(799, budget).level).toBe("normal");
    expect(pressureOf(800, budget).level).toBe("compact");
    expect(pressureOf(949, budget).level).toBe("compact");
    expect(pressureOf(950, budget)).toEqual({ level: "critical", ratio: 0.95, usage_tokens: 950, total_tokens: 1_000 });
  });
});

describe("compaction gate", () => {
  const critical = { pressure: pressureOf(980, budget), compacted: false };

  it("refuses heavy tool calls at critical pressure until compaction has run", () => {
    let refused: unknown;
    try {
      checkCompactionGate(critical, { name: "fs.write", effect: "write" });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(CompactionRequiredError);
    expect(isConclaveError(refused, "forbidden")).toBe(true);
    expect((refused as CompactionRequiredError).reason).toBe("compaction_required");
    expect((refused as Error).message).toBe(
      "tool fs.write refused: the session's context is at critical pressure (98% of 1000 tokens) and must be compacted first",
    );
    expect(() => checkCompactionGate(critical, { name: "web.fetch", effect: "read", large_output: true })).toThrow(
      CompactionRequiredError,
    );
  });

  it("lets light calls through, and heavy ones once compaction has run or below critical", () => {
    expect(() => checkCompactionGate(critical, { name: "clock.now", effect: "read" })).not.toThrow();
    expect(() =>
      checkCompactionGate({ ...critical, compacted: true }, { name: "fs.write", effect: "write" }),
    ).not.toThrow();
    const compact = { pressure: pressureOf(900, budget), compacted: false };
    expect(() => checkCompactionGate(compact, { name: "fs.write", effect: "write" })).not.toThrow();
  });
});

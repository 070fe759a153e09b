import { ErrorCode } from "../../src/contracts/errors.ts";
import type { Stage, TurnWarning } from "../../src/contracts/turn.ts";
import type { TurnEvent } from "../../src/contracts/turnProtocol.ts";
import { codeOf, isConclaveError, messageOf } from "../../src/errors.ts";

/**
 * The warnings a stage adds when it falls short, as `warn` action objects for
 * the chart: its invoked actor failed, its voice could not finish, or it
 * missed its deadline.
 */

/** A warning's code: a ConclaveError's own, a wire code carried by another error, else `internal`. */
export const warningCodeOf = (error: unknown): string => {
  if (isConclaveError(error)) return error.code;
  const wire = ErrorCode.safeParse(codeOf(error));
  return wire.success ? wire.data : "internal";
};

/** The warning for a stage whose invoked actor failed. */
export const failed = (stage: Stage, subject?: string) => ({
  type: "warn" as const,
  params: ({ event }: { event: { error?: unknown } }): TurnWarning => ({
    stage,
    code: warningCodeOf(event.error),
    message: messageOf(event.error),
    ...(subject ? { subject } : {}),
  }),
});

/** The warning for a rendering the voice could not finish. */
export const voiceFailed = (stage: Stage) => ({
  type: "warn" as const,
  params: ({ event }: { event: TurnEvent }): TurnWarning => ({
    stage,
    code: event.type === "voice.failed" ? event.code : "internal",
    message: event.type === "voice.failed" ? event.message : "voice failed",
    subject: "voice",
  }),
});

/** The warning for a stage that missed its deadline. */
export const overran = (stage: Stage, what: string, subject?: string) => ({
  type: "warn" as const,
  params: { stage, code: "timeout", message: `${what} missed the stage deadline`, ...(subject ? { subject } : {}) },
});

/** The warning for a rendering the deterministic voice gave in place of the one asked, if it did. */
export const voiceFellBack = {
  type: "fellBack" as const,
  params: ({ event }: { event: TurnEvent }) => ({
    subject: "voice" as const,
    fallback: event.type === "voice.done" ? event.fallback : undefined,
  }),
};

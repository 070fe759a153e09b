import { AuthorizationError } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { UsageError } from "../../src/cli/args.ts";
import { describeFailure, EXIT, failureLine } from "../../src/cli/failures.ts";
import { TurnFailedError } from "../../src/client/turns.ts";
import { TurnTimeoutError } from "../../src/eventlog/followRun.ts";
import { LlmConfigError } from "../../src/llm/config.ts";
import { LlmError } from "../../src/llm/errors.ts";
import { NatsServerNotFoundError } from "../../src/nats/server.ts";
import { PortInUseError } from "../../src/viewer/localHttp.ts";

describe("describeFailure", () => {
  it("maps each error, by class and code, to its code and exit status", () => {
    const cases: [unknown, string, number][] = [
      [new UsageError("--session is required"), "usage", EXIT.usage],
      [new LlmConfigError("CONCLAVE_LLM_MODEL is required"), "config", EXIT.usage],
      [new PortInUseError(7420), "port_in_use", EXIT.usage],
      [new AuthorizationError("Authorization Violation"), "unauthorized", EXIT.usage],
      [new RemoteCallError("s", "invalid_request", "bad text"), "invalid_request", EXIT.usage],
      [new TurnTimeoutError("s", 1, 10), "turn_timeout", EXIT.turnFailed],
      [new TurnFailedError("s", 1, { code: "state_invalid", message: "bad" }), "turn_failed", EXIT.turnFailed],
      [new RemoteCallError("s", "busy", "a turn is running"), "busy", EXIT.turnFailed],
      [new RemoteCallError("s", "no_responders", "nobody"), "no_responders", EXIT.unavailable],
      [new RemoteCallError("s", "timeout", "slow"), "timeout", EXIT.unavailable],
      [new NatsServerNotFoundError(), "nats_server_not_found", EXIT.unavailable],
      [new LlmError("rate_limited", "voice", "slow down"), "rate_limited", EXIT.internal],
      [new TypeError("x is undefined"), "internal", EXIT.internal],
      ["a string", "internal", EXIT.internal],
    ];
    for (const [error, code, exit] of cases) expect({ error, ...describeFailure(error) }).toMatchObject({ code, exit });
  });

  it("keeps the message to one line, issues included", () => {
    const failure = describeFailure(
      new RemoteCallError("conclave.turn.submit.s", "invalid_request", "invalid\nsubmission", ["text: too long"]),
    );
    expect(failure.message).toBe("invalid submission (text: too long)");
    expect(failureLine("conclave send", failure, false)).toBe("conclave send: invalid submission (text: too long)");
    expect(JSON.parse(failureLine("conclave send", failure, true))).toEqual({
      error: { code: "invalid_request", message: "invalid submission (text: too long)" },
    });
  });
});

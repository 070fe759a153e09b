import { describe, expect, it } from "vitest";
import type { TurnStatusRecord } from "../../src/contracts/wal.ts";
import {
  attemptedBefore,
  type DeliveryFacts,
  decideDelivery,
  decideRedelivery,
  decideTakeover,
  FIRST_DELIVERY_WINDOW_MS,
} from "../../src/runtime/runner/delivery.ts";

const facts = (overrides: Partial<DeliveryFacts> = {}): DeliveryFacts => ({
  turnId: 7,
  deliveryCount: 1,
  storedAgoMs: 5,
  heldHere: false,
  ownsSession: true,
  expired: false,
  finishedHere: false,
  ...overrides,
});

const status = (overrides: Partial<TurnStatusRecord> = {}): TurnStatusRecord => ({
  session_id: "s",
  turn_id: 7,
  status: "inflight",
  submitted_at: 1,
  updated_at: 2,
  attempts: 1,
  runner: "host:1",
  ...overrides,
});

describe("a WAL delivery", () => {
  it("starts a first delivery of a session this runner owns", () => {
    expect(decideDelivery(facts())).toEqual({ kind: "start" });
    // An actor that finished a later turn still runs an earlier one that reaches it late.
    expect(decideDelivery(facts({ turnId: 3 }))).toEqual({ kind: "start" });
  });

  it("keeps the newer handle of a turn it already holds, whatever else is true", () => {
    expect(decideDelivery(facts({ heldHere: true, deliveryCount: 3, ownsSession: false, expired: true }))).toEqual({
      kind: "refresh_hold",
    });
  });

  it("removes another entry for a turn it holds: a suspended run's earlier entry while its answer runs here", () => {
    expect(decideDelivery(facts({ heldHere: true, heldOtherEntry: true, deliveryCount: 2 }))).toEqual({
      kind: "drop_stale",
    });
  });

  it("leaves a session another runner owns to its owner", () => {
    expect(decideDelivery(facts({ ownsSession: false }))).toEqual({ kind: "defer_to_owner" });
    expect(decideDelivery(facts({ ownsSession: false, deliveryCount: 4, expired: true }))).toEqual({
      kind: "defer_to_owner",
    });
  });

  it("expires a turn that waited too long, first delivery or not", () => {
    expect(decideDelivery(facts({ expired: true }))).toEqual({ kind: "expire" });
    expect(decideDelivery(facts({ expired: true, deliveryCount: 2 }))).toEqual({ kind: "expire" });
  });

  it("restores the session when its live actor already ran the turn but it was never settled (a failed finish)", () => {
    // Redelivered to the same runner after its events could not be stored: the actor counts turn 7 as run
    // and would drop it as "not a new turn", leaving it inflight with nobody working on it.
    expect(decideDelivery(facts({ deliveryCount: 2, finishedHere: true }))).toEqual({ kind: "reset_session" });
    expect(decideDelivery(facts({ deliveryCount: 1, finishedHere: true }))).toEqual({ kind: "reset_session" });
  });

  it("takes the status of a first delivery stored too long ago to be sure it is one", () => {
    // nats-server has handed an abandoned entry to the runner taking it over with a delivery count of 1.
    expect(decideDelivery(facts({ storedAgoMs: FIRST_DELIVERY_WINDOW_MS - 1 }))).toEqual({ kind: "start" });
    expect(decideDelivery(facts({ storedAgoMs: FIRST_DELIVERY_WINDOW_MS }))).toEqual({ kind: "start_if_unattempted" });
    // Stored before this runner pulled its partition: another runner may have had it, however recent it is.
    expect(decideDelivery(facts({ storedAgoMs: 5, storedBeforePulled: true }))).toEqual({
      kind: "start_if_unattempted",
    });
    const pending = status({ status: "pending", attempts: 0 });
    expect(attemptedBefore({ before: pending, taken: true, poison: false, stale: false })).toBe(false);
    expect(attemptedBefore({ before: null, taken: true, poison: false, stale: false })).toBe(false);
    // Another runner's attempt is recorded: a takeover, not a start.
    expect(attemptedBefore({ before: status(), taken: true, poison: false, stale: false })).toBe(true);
    expect(attemptedBefore({ before: status({ status: "done" }), taken: false, poison: false, stale: false })).toBe(
      true,
    );
  });

  it("reads the status of any later delivery", () => {
    expect(decideDelivery(facts({ deliveryCount: 2 }))).toEqual({ kind: "check_status" });
    expect(decideDelivery(facts({ deliveryCount: 5 }))).toEqual({ kind: "check_status" });
  });
});

describe("a delivery after the first", () => {
  it("is poison once runners started it the maximum number of times", () => {
    expect(decideRedelivery({ before: status({ attempts: 5 }), taken: false, poison: true })).toEqual({
      kind: "poison",
    });
  });

  it("is a late duplicate when the turn is already done, failed or expired", () => {
    for (const settled of ["done", "failed", "expired"] as const) {
      expect(decideRedelivery({ before: status({ status: settled }), taken: false, poison: false })).toEqual({
        kind: "already_settled",
      });
    }
  });

  it("is a late duplicate when it answers a suspension older than the last one answered, even at the attempt cap", () => {
    const answered = status({ status: "pending", attempts: 5, answered_through: 4 });
    expect(decideRedelivery({ before: answered, taken: false, poison: false, stale: true })).toEqual({
      kind: "already_settled",
    });
  });

  it("is a takeover, counting the attempt and naming the runner it was taken from", () => {
    expect(decideRedelivery({ before: status({ attempts: 2 }), taken: true, poison: false })).toEqual({
      kind: "take_over",
      attempt: 3,
      previousRunner: "host:1",
    });
  });

  it("is a takeover of attempt 2 when the first runner's status write never landed", () => {
    expect(decideRedelivery({ before: null, taken: true, poison: false })).toEqual({ kind: "take_over", attempt: 2 });
    expect(
      decideRedelivery({
        before: status({ status: "pending", attempts: 0, runner: undefined }),
        taken: true,
        poison: false,
      }),
    ).toEqual({
      kind: "take_over",
      attempt: 2,
    });
  });
});

describe("a turn taken over", () => {
  it("is settled as done when its terminal event is stored", () => {
    expect(decideTakeover({ kinds: ["TURN_STARTED", "TURN_COMPLETED"], lastSeq: 1 })).toEqual({ kind: "settle_done" });
  });

  it("runs fresh when nothing of it is stored", () => {
    expect(decideTakeover({ kinds: [], lastSeq: -1 })).toEqual({ kind: "run_fresh" });
    // A suspended recipe run's resume that no runner started yet: its log is the run so far, not an abandoned attempt.
    expect(
      decideTakeover({
        kinds: ["TURN_STARTED", "RECIPE_STARTED", "TURN_SUSPENDED"],
        lastSeq: 2,
        unstartedResume: true,
      }),
    ).toEqual({ kind: "run_fresh" });
  });

  it("resumes after the last stored event otherwise", () => {
    expect(decideTakeover({ kinds: ["TURN_STARTED", "TURN_STAGE_CHANGED"], lastSeq: 1 })).toEqual({
      kind: "resume",
      afterSeq: 1,
    });
  });
});

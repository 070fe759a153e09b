import { describe, expect, it } from "vitest";
import type { InspectionRecord } from "../../src/inspect/record.ts";
import { LiveActors } from "../../src/viewer/liveActors.ts";

let seq = 0;
const base = (session: string) => ({ v: 1 as const, process: "runner:7", seq: seq++, ts: seq, session });
const created = (session: string, machine?: string): InspectionRecord => ({
  ...base(session),
  kind: "actor",
  name: "turn",
  ...(machine ? { machine } : {}),
});
const snapshot = (session: string, value: unknown, status = "active"): InspectionRecord => ({
  ...base(session),
  kind: "snapshot",
  event: { type: "x" },
  snapshot: { status, value },
});

describe("LiveActors", () => {
  it("follows actors of the drawn machines only, reporting each change of state once", () => {
    const actors = new LiveActors(["turn"]);
    expect(actors.apply(created("runner:7:x:1", "other"))).toBeNull();
    expect(actors.apply(created("runner:7:x:2"))).toBeNull();
    expect(actors.apply(snapshot("runner:7:x:1", "a"))).toBeNull();
    expect(actors.apply(created("runner:7:x:3", "turn"))).toMatchObject({
      status: "created",
      value: null,
      machine: "turn",
    });
    expect(actors.apply(snapshot("runner:7:x:3", { agents: "wave" }))).toMatchObject({ value: { agents: "wave" } });
    expect(actors.apply(snapshot("runner:7:x:3", { agents: "wave" }))).toBeNull();
    expect(actors.liveCount).toBe(1);
    expect(actors.apply(snapshot("runner:7:x:3", "completed", "done"))).toMatchObject({ status: "done" });
    expect(actors.liveCount).toBe(0);
    expect(actors.apply(snapshot("runner:7:x:3", "completed", "done"))).toBeNull();
  });

  it("replays live actors and the recent history to a page opened later, within bounds", () => {
    const actors = new LiveActors(["session", "turn"], { maxRecent: 3 });
    actors.apply(created("r:1:x:0", "session"));
    actors.apply(snapshot("r:1:x:0", "idle"));
    for (let i = 1; i <= 3; i++) {
      actors.apply(created(`r:1:x:${i}`, "turn"));
      actors.apply(snapshot(`r:1:x:${i}`, "completed", "done"));
    }
    const replay = actors.replay();
    expect(replay[0]).toMatchObject({ session: "r:1:x:0", value: "idle" });
    expect(replay.slice(1).map((u) => u.session)).toEqual(["r:1:x:2", "r:1:x:3", "r:1:x:3"]);
  });
});

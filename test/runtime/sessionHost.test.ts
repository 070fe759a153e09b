import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { sessionMachine } from "../../machines/session.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { SessionHost } from "../../src/runtime/runner/sessionHost.ts";
import { type SessionSnapshot, SessionStore } from "../../src/runtime/sessionStore.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();

const snapshotAfter = (turns: number): SessionSnapshot => ({
  turns_completed: turns,
  last_turn_id: turns,
  modulators: { ...neutralModulators(), arousal: turns / 10 },
  stance: neutralStance(),
});

const createSession = (sessionId: string, snapshot: SessionSnapshot | null) =>
  createActor(sessionMachine, { input: { session_id: sessionId, ...(snapshot ?? {}) } });

/** The real store, with one method wrapped. */
function wrapping<K extends keyof SessionStore>(store: SessionStore, method: K, wrap: SessionStore[K]): SessionStore {
  return new Proxy(store, {
    get: (target, property, receiver) =>
      property === method ? wrap : (Reflect.get(target, property, receiver) as unknown),
  });
}

describe("the session host", () => {
  it("writes a session's snapshots in the order its turns finished, whichever write is slower", async () => {
    const store = await SessionStore.open(await nats.connect("runner"));
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first save is slow (held until the second is asked for): without ordering, the second lands first.
    const slowFirst = wrapping(store, "saveSnapshot", async (sessionId, snapshot) => {
      if (snapshot.turns_completed === 1) await released;
      return store.saveSnapshot(sessionId, snapshot);
    });
    const host = new SessionHost(createSession, slowFirst, silentLogger);
    const first = host.save("ordered", snapshotAfter(1));
    const second = host.save("ordered", snapshotAfter(2));
    release();
    await Promise.all([first, second]);
    expect(await store.snapshot("ordered")).toEqual(snapshotAfter(2));
  });

  it("tries a failed read of the stored state again, and never remembers a failure", async () => {
    const store = await SessionStore.open(await nats.connect("runner"));
    await store.saveSnapshot("flaky", snapshotAfter(3));
    let failuresLeft = 1;
    let reads = 0;
    const flaky = wrapping(store, "snapshot", async (sessionId) => {
      reads++;
      if (failuresLeft-- > 0) throw new Error("NATS went away");
      return store.snapshot(sessionId);
    });
    const host = new SessionHost(createSession, flaky, silentLogger);
    const actor = await host.get("flaky");
    expect(actor.getSnapshot().context.turns_completed).toBe(3);
    expect(reads).toBe(2);

    let down = true;
    const broken = wrapping(store, "snapshot", async (sessionId) => {
      if (down) throw new Error("NATS went away");
      return store.snapshot(sessionId);
    });
    const brokenHost = new SessionHost(createSession, broken, silentLogger);
    await expect(brokenHost.get("flaky")).rejects.toThrow("NATS went away");
    down = false;
    expect((await brokenHost.get("flaky")).getSnapshot().context.last_turn_id).toBe(3);
  });

  it("forgets an evicted session: its next turn restores it from the stored state", async () => {
    const store = await SessionStore.open(await nats.connect("runner"));
    await store.saveSnapshot("evicted", snapshotAfter(5));
    const host = new SessionHost(createSession, store, silentLogger);
    const actor = await host.get("evicted");
    expect(actor.getSnapshot().context.last_turn_id).toBe(5);
    host.evict("evicted");
    expect(actor.getSnapshot().status).toBe("stopped");
    expect(host.finishedHere("evicted", 5)).toBe(false);
    expect(await host.get("evicted")).not.toBe(actor);
  });

  it("lets an idle session go only once its saves are done and the runner holds nothing of it", async () => {
    const store = await SessionStore.open(await nats.connect("runner"));
    await store.saveSnapshot("swept", snapshotAfter(2));
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = wrapping(store, "saveSnapshot", async (sessionId, snapshot) => {
      await released;
      return store.saveSnapshot(sessionId, snapshot);
    });
    let busy = true;
    const evicted: string[] = [];
    const host = new SessionHost(createSession, slow, silentLogger, {
      idleMs: 1,
      busy: (sessionId) => busy && sessionId === "swept",
      onEvicted: (sessionId) => evicted.push(sessionId),
    });
    await host.get("swept");
    await host.get("bystander");
    const saving = host.save("swept", snapshotAfter(3));
    // The bystander, as old and idle, goes: the sweep ran past the TTL. The session the runner is busy with stays.
    await until(() => evicted.includes("bystander"), { what: "the idle bystander evicted" });
    host.sweep();
    expect(host.ifRunning("swept")).toBeDefined();
    busy = false;
    host.sweep();
    expect(host.ifRunning("swept"), "evicted with a snapshot save under way").toBeDefined();
    release();
    await saving;
    await until(() => evicted.includes("swept"), { what: "the session evicted once saved" });
    expect(host.ifRunning("swept")).toBeUndefined();
    expect(evicted.filter((sessionId) => sessionId === "swept")).toHaveLength(1);
    // Its next turn finds it where its last save left it.
    expect((await host.get("swept")).getSnapshot().context.turns_completed).toBe(3);
    host.stopAll();
  });
});

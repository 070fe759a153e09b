/**
 * Schedules end to end: a real nats-server, two `conclave runner` processes
 * and a worker hosting the recipe agents (offline model). The schedule log is
 * read as it is written (event-driven waits on its events).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import type { ScheduleEvent } from "../../src/schedules/intent.ts";
import { ScheduleLog } from "../../src/schedules/scheduleLog.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { sleep } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
const events: ScheduleEvent[] = [];
const waiters = new Set<() => void>();
const following = new AbortController();

/** Resolves once the schedule log's events satisfy `check` (checked on each new event). */
function logHolds(check: (all: ScheduleEvent[]) => boolean, timeoutMs = 20_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waiters.delete(probe);
      reject(new Error(`the schedule log never held: ${JSON.stringify(events.slice(-10))}`));
    }, timeoutMs);
    const probe = () => {
      if (!check(events)) return;
      clearTimeout(timer);
      waiters.delete(probe);
      resolve();
    };
    waiters.add(probe);
    probe();
  });
}

const of = (id: string, kind: ScheduleEvent["kind"]) =>
  events.filter((event): event is ScheduleEvent => event.kind === kind && "id" in event && event.id === id);

const writeDraft: JsonObject = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "scheduled-draft" },
  topology: [
    { type: "agent", id: "write", agent_ref: "content.writer", inputs_map: { topic: "topic" }, output_key: "draft" },
  ],
};
const recipe = { recipe: { document: writeDraft, inputs: { topic: "Weather" } } };

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  await Promise.all([processes.spawn("runner-a", ["runner"]), processes.spawn("runner-b", ["runner"])]);
  client = await connect({ nc: await nats.connect("client") });
  const nc = await nats.connect("runner");
  const log = await ScheduleLog.open(nc, jetstream(nc), await jetstreamManager(nc));
  void log.follow((event) => {
    if (!event) return;
    events.push(event);
    for (const waiter of [...waiters]) waiter();
  }, following.signal);
}, 60_000);

afterAll(() => following.abort());

describe("schedules", () => {
  it("fire an interval until the convergence condition holds, then stop by themselves", async () => {
    const created = await client.schedules.create({
      id: "converges",
      session_id: "sched-converge",
      what: recipe,
      when: { every_ms: 300 },
      convergence: {
        all_of: [
          { path: "outcome.status", eq: "Complete" },
          { path: "blackboard.draft.text", exists: true },
          { path: "fires", gte: 2 },
        ],
      },
    });
    expect(created.status).toBe("active");
    expect(created.next_due).toBeGreaterThan(Date.now() - 1_000);
    await logHolds(() => of("converges", "converged").length === 1);
    const [converged] = of("converges", "converged");
    expect(of("converges", "fired").length).toBeGreaterThanOrEqual(2);
    // Absence of further fires: a few intervals pass and no fire starts after the convergence. (A fire
    // already submitted when the condition was found to hold, its interval overlapping the run's, may
    // record its `fired` a moment later; its `at` is when it started.)
    await sleep(1_000);
    expect(of("converges", "fired").filter((event) => event.at > converged!.at)).toEqual([]);
    const [listed] = (await client.schedules.list("sched-converge")).filter((s) => s.intent.id === "converges");
    expect(listed?.status).toBe("converged");
    expect(listed?.next_due).toBeNull();
  });

  it("with two runners, fire each due time once", async () => {
    await client.schedules.create({ id: "twice", session_id: "sched-two", what: recipe, when: { every_ms: 200 } });
    await logHolds(() => of("twice", "fired").length >= 6);
    await client.schedules.cancel("twice");
    const fired = of("twice", "fired") as Extract<ScheduleEvent, { kind: "fired" }>[];
    const dues = fired.map((event) => event.due);
    expect(new Set(dues).size).toBe(dues.length);
    expect(fired.every((event) => event.turn_id !== undefined)).toBe(true);
    expect(new Set(fired.map((event) => event.turn_id)).size).toBe(fired.length);
    // Each fire is one turn of the session: nothing was submitted twice.
    const turns = await client.turns("sched-two");
    expect(turns.map((turn) => turn.turn_id)).toEqual(expect.arrayContaining(fired.map((event) => event.turn_id)));
  });

  it("after downtime, catch up at most catch_up_max missed runs and defer the rest with one event", async () => {
    // Three due times missed: the schedule started 200 s ago with a minute's interval.
    const start = Date.now() - 200_000;
    await client.schedules.create({
      id: "catch-up",
      session_id: "sched-catch-up",
      what: recipe,
      when: { every_ms: 60_000, start_ms: start },
      catch_up_max: 2,
    });
    await logHolds(() => of("catch-up", "fired").length === 2 && of("catch-up", "deferred").length === 1);
    const [deferred] = of("catch-up", "deferred") as Extract<ScheduleEvent, { kind: "deferred" }>[];
    expect(deferred).toMatchObject({ count: 1, first: start + 180_000, last: start + 180_000 });
    const dues = (of("catch-up", "fired") as Extract<ScheduleEvent, { kind: "fired" }>[]).map((event) => event.due);
    // The catch-up fires go out together: the log may hold them in either order.
    expect(dues.sort((a, b) => a - b)).toEqual([start + 60_000, start + 120_000]);
    const [listed] = await client.schedules.list("sched-catch-up");
    expect(listed).toMatchObject({ status: "active", fires: 2, deferred: 1, next_due: start + 240_000 });
    await client.schedules.cancel("catch-up");
  });

  it("refuse a bad request with a clear error, and a second create of an id with conflict", async () => {
    await expect(
      client.schedules.create({ id: "bad", session_id: "s", what: { text: "x" }, when: { cron: "nope" } }),
    ).rejects.toMatchObject({ code: "invalid_request" });
    await client.schedules.create({
      id: "once",
      session_id: "s",
      what: { text: "x" },
      when: { at: Date.now() + 3_600_000 },
    });
    await expect(
      client.schedules.create({ id: "once", session_id: "s", what: { text: "x" }, when: { at: Date.now() } }),
    ).rejects.toMatchObject({ code: "conflict" });
    await expect(client.schedules.cancel("nobody")).rejects.toMatchObject({ code: "not_found" });
    const updated = await client.schedules.update("once", { catch_up_max: 3 });
    expect(updated.intent.catch_up_max).toBe(3);
  });

  it("are managed with conclave schedule: readable lines, and JSON with --json", async () => {
    const created = await runConclave(nats.url, [
      "schedule",
      "create",
      "cli-nightly",
      "--session",
      "sched-cli",
      "--text",
      "summarise the day",
      "--cron",
      "0 22 * * *",
      "--tz",
      "Europe/Paris",
      "--catch-up",
      "2",
    ]);
    expect(created.stderr).toBe("");
    expect(created.stdout).toMatch(
      /^cli-nightly {2}active {2}session sched-cli {2}cron '0 22 \* \* \*' Europe\/Paris {2}turn "summarise the day" {2}fired 0 {2}next 20\d\d-/,
    );
    const listed = await runConclave(nats.url, ["schedule", "list", "--session", "sched-cli", "--json"]);
    const [view] = listed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(view).toMatchObject({ status: "active", intent: { id: "cli-nightly", catch_up_max: 2 } });
    const cancelled = await runConclave(nats.url, ["schedule", "cancel", "cli-nightly"]);
    expect(cancelled.stdout).toMatch(/^cli-nightly {2}cancelled .* next —/);
    const bad = await runConclave(nats.url, [
      "schedule",
      "create",
      "x",
      "--session",
      "s",
      "--text",
      "t",
      "--cron",
      "nope",
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
  });
});

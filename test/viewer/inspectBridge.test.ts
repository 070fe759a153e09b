import { createServer } from "node:net";
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { describe, expect, it } from "vitest";
import { createActor, fromPromise } from "xstate";
import { MACHINES } from "../../machines/index.ts";
import { createInspectionPublisher } from "../../src/inspect/publisher.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });

/** Reads a Server-Sent Events stream until `done` says enough (or the time is up). */
async function readStately(url: string, done: (events: StatelyInspectionEvent[]) => boolean, timeoutMs = 10_000) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const events: StatelyInspectionEvent[] = [];
  try {
    const response = await fetch(url, { signal: abort.signal });
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let end = buffered.indexOf("\n\n");
      while (end >= 0) {
        const frame = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = frame.split("\n").find((line) => line.startsWith("data: "));
        if (frame.includes("event: stately") && data) events.push(JSON.parse(data.slice(6)));
        end = buffered.indexOf("\n\n");
      }
      if (done(events)) break;
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return events;
}

describe("conclave inspect", () => {
  it("relays another process's actors to the Stately inspector page, in its own event format", async () => {
    const port = await freePort();
    await processes.spawn("inspect", ["inspect", "--port", String(port)]);
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toContain('<iframe id="inspector" src="https://stately.ai/inspect">');
    expect(page).toContain('new EventSource("/events")');

    // Garbage first: the bridge skips it. Then a real machine, inspected in this process.
    const nc = await nats.connect("worker");
    nc.publish("conclave.inspect.junk", "][");
    const publisher = createInspectionPublisher(nc, "test:42");
    const agent = MACHINES.agent!.provide({
      actors: { think: fromPromise(async () => ({ summary: "ok" }) as never) },
    });
    const actor = createActor(agent, {
      input: { agent_id: "emotion.stress", timeout_ms: 1_000 } as never,
      inspect: publisher,
    });
    actor.start();
    actor.send({ type: "start" });
    await nc.flush();

    const events = await readStately(`http://127.0.0.1:${port}/events`, (seen) =>
      seen.some((e) => e.type === "@xstate.snapshot" && e.sessionId === "test:42:x:0" && e.snapshot.status === "done"),
    );
    const registered = events.filter((e) => e.type === "@xstate.actor");
    const root = registered.find((e) => e.sessionId === "test:42:x:0");
    expect(root).toMatchObject({ name: "agent", _version: expect.any(String) });
    expect(root?.type === "@xstate.actor" && JSON.parse(root.definition ?? "{}")).toMatchObject({ id: "agent" });
    const child = registered.find((e) => e.sessionId !== "test:42:x:0");
    expect(child).toMatchObject({ parentId: "test:42:x:0", rootId: "test:42:x:0" });
    expect(child?.sessionId).toMatch(/^test:42:x:\d+$/);
    const values = events.flatMap((e) =>
      e.type === "@xstate.snapshot" && e.sessionId === "test:42:x:0" ? [(e.snapshot as { value?: unknown }).value] : [],
    );
    expect(values).toContain("thinking");
    expect(events.some((e) => e.type === "@xstate.event" && e.event.type === "start")).toBe(true);
  });
});

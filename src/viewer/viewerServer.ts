import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { AnyStateMachine } from "xstate";
import { machineGraph } from "../graph/machineGraph.ts";
import { collectInspection } from "../inspect/collector.ts";
import type { Logger } from "../runtime/log.ts";
import { LiveActors } from "./liveActors.ts";
import { closeServer, listenLocal, sendText } from "./localHttp.ts";
import { viewerPage } from "./page.ts";
import { SseHub } from "./sseHub.ts";
import { followTurnEvents, type TurnEventLike } from "./turnEventFeed.ts";

/**
 * The offline viewer: on 127.0.0.1, one page drawing every machine, kept live
 * over Server-Sent Events with the actors' states (from the NATS inspection
 * stream) and the turns' events (from JetStream).
 *
 *   GET /               the page (everything inline: no CDN, works offline)
 *   GET /events         the event stream: hello, process, actor, turn-event
 *   GET /machines.json  the machines' graphs
 */
export interface Viewer {
  url: string;
  close(): Promise<void>;
}

export interface ViewerOptions {
  machines: Readonly<Record<string, AnyStateMachine>>;
  port: number;
  log: Logger;
  /** Turn events kept for a page opened mid-way. */
  keepEvents?: number;
}

export async function startViewer(nc: NatsConnection, options: ViewerOptions): Promise<Viewer> {
  const graphs = Object.entries(options.machines).map(([key, machine]) => ({ key, graph: machineGraph(machine) }));
  const page = viewerPage(graphs);
  const hub = new SseHub();
  const actors = new LiveActors(graphs.map(({ graph }) => graph.id));
  const processes = new Set<string>();
  const events: TurnEventLike[] = [];
  const keepEvents = options.keepEvents ?? 400;
  const warn = warnSparingly(options.log);

  const inspection = collectInspection(
    nc,
    (record) => {
      if (!processes.has(record.process)) {
        processes.add(record.process);
        hub.send("process", { process: record.process });
      }
      const update = actors.apply(record);
      if (update) hub.send("actor", update);
    },
    (subject, reason) => warn(`skipped an inspection message on ${subject}: ${reason}`),
  );
  // The subscription is in place on the server before the viewer says it is ready.
  await nc.flush();
  const stopEvents = new AbortController();
  const following = followTurnEvents(
    jetstream(nc),
    (event) => {
      events.push(event);
      if (events.length > keepEvents) events.shift();
      hub.send("turn-event", event);
    },
    stopEvents.signal,
    warn,
  );

  const { server, url } = await listenLocal((request, response) => {
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    if (request.method !== "GET") return sendText(response, 405, "text/plain", "GET only\n");
    if (path === "/") return sendText(response, 200, "text/html", page);
    if (path === "/machines.json") return sendText(response, 200, "application/json", JSON.stringify(graphs));
    if (path === "/events")
      return hub.attach(request, response, [
        { event: "hello", data: { machines: graphs.map(({ key }) => key) } },
        ...[...processes].map((process) => ({ event: "process", data: { process } })),
        ...actors.replay().map((data) => ({ event: "actor", data })),
        ...events.map((data) => ({ event: "turn-event", data })),
      ]);
    sendText(response, 404, "text/plain", "not found\n");
  }, options.port).catch((error: unknown) => {
    inspection.unsubscribe();
    stopEvents.abort();
    throw error;
  });

  return {
    url,
    close: async () => {
      inspection.unsubscribe();
      stopEvents.abort();
      hub.close();
      await Promise.all([closeServer(server), following]);
    },
  };
}

/** The first few warnings of each kind, then one a minute: a bad publisher must not flood the log. */
function warnSparingly(log: Logger): (message: string) => void {
  const seen = new Map<string, { count: number; last: number }>();
  return (message) => {
    const kind = message.slice(0, 40);
    const entry = seen.get(kind) ?? { count: 0, last: 0 };
    entry.count++;
    seen.set(kind, entry);
    const now = Date.now();
    if (entry.count <= 3 || now - entry.last > 60_000) {
      entry.last = now;
      log.warn(entry.count > 3 ? `${message} (${entry.count} so far)` : message);
    }
  };
}

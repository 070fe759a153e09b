import type { ServerResponse } from "node:http";
import { type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { AnyStateMachine } from "xstate";
import { SessionId } from "../contracts/ids.ts";
import { messageOf } from "../errors.ts";
import { readEvents } from "../eventlog/reader.ts";
import { machineGraph } from "../graph/machineGraph.ts";
import { collectInspection } from "../inspect/collector.ts";
import type { InspectionRecord } from "../inspect/record.ts";
import type { Logger } from "../telemetry/log.ts";
import { readElkBundle } from "./elkBundle.ts";
import { LiveActors } from "./liveActors.ts";
import { closeServer, listenLocal, sendText } from "./localHttp.ts";
import { viewerPage } from "./page.ts";
import { RecipeDiagrams, type TurnRef } from "./recipeDiagrams.ts";
import { SseHub } from "./sseHub.ts";
import { followTurnEvents, type TurnEventLike } from "./turnEventFeed.ts";

/**
 * The offline viewer: on 127.0.0.1, one page drawing every machine, kept live
 * over Server-Sent Events with the actors' states (from the NATS inspection
 * stream) and the turns' events (from JetStream). A recipe run's machine is
 * drawn once it is seen running: the recipe comes from its turn's
 * RECIPE_STARTED, is compiled as the runner compiled it, and sent to the page.
 *
 *   GET /               the page (styles and script inline: no CDN, works offline)
 *   GET /elk.js         the layout library the page draws with, elkjs's bundle from node_modules
 *   GET /events         the event stream: hello, process, recipe, recipe-gone, actor, turn-event
 *   GET /machines.json  the machines' graphs
 *   GET /recipes.json   the diagrams of the recipes seen running
 *   GET /log.json?session=S&turn=N   a turn's whole stored event log, as the tape holds it
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
  /** The AG-UI endpoint the page's conversation panel talks to (default: conversationPanel's DEFAULT_AGUI_URL). */
  gateway?: string;
  /** The trace UI's page for a turn, `{session}` and `{turn}` replaced (see `conclave viewer --traces-url`); without it the page says "tracing off". */
  tracesUrl?: string;
}

export async function startViewer(nc: NatsConnection, options: ViewerOptions): Promise<Viewer> {
  const graphs = Object.entries(options.machines).map(([key, machine]) => ({ key, graph: machineGraph(machine) }));
  const page = viewerPage(graphs, {
    ...(options.gateway ? { gateway: options.gateway } : {}),
    ...(options.tracesUrl ? { tracesUrl: options.tracesUrl } : {}),
  });
  const elk = readElkBundle();
  // Without it the page still shows every machine, as cards.
  if (!elk.ok) options.log.warn(`the viewer draws no diagrams: ${elk.reason}`);
  const hub = new SseHub();
  const warn = warnSparingly(options.log);
  const js = jetstream(nc);
  let jsm: Promise<JetStreamManager> | null = null;
  const turnLog = async (turn: TurnRef) => {
    jsm ??= jetstreamManager(nc).catch((error: unknown) => {
      jsm = null;
      throw error;
    });
    return readEvents(js, await jsm, turn.session_id, turn.turn_id);
  };
  const readDocument = async (turn: TurnRef) => {
    const started = (await turnLog(turn)).find((event) => event.kind === "RECIPE_STARTED");
    return started?.kind === "RECIPE_STARTED" ? started.payload.document : null;
  };
  const recipes = new RecipeDiagrams({
    readDocument,
    onDiagram: (diagram) => {
      actors.watch(diagram.key);
      hub.send("recipe", diagram);
    },
    onForget: (key) => hub.send("recipe-gone", { key }),
    onRecord: (record) => applyRecord(record),
    warn,
  });
  const actors = new LiveActors(
    graphs.map(({ graph }) => graph.id),
    { describe: recipes.describe },
  );
  const applyRecord = (record: InspectionRecord) => {
    const update = actors.apply(record);
    if (update) hub.send("actor", update);
  };
  const processes = new Set<string>();
  const events: TurnEventLike[] = [];
  const keepEvents = options.keepEvents ?? 400;

  const inspection = collectInspection(
    nc,
    (record) => {
      if (!processes.has(record.process)) {
        processes.add(record.process);
        hub.send("process", { process: record.process });
      }
      if (!recipes.offer(record)) applyRecord(record);
    },
    (subject, reason) => warn(`skipped an inspection message on ${subject}: ${reason}`),
  );
  // The subscription is in place on the server before the viewer says it is ready.
  await nc.flush();
  const stopEvents = new AbortController();
  const following = followTurnEvents(
    js,
    (rawEvent) => {
      recipes.noteEvent(rawEvent);
      const event = forPage(rawEvent);
      events.push(event);
      if (events.length > keepEvents) events.shift();
      hub.send("turn-event", event);
    },
    stopEvents.signal,
    warn,
  );

  const { server, url } = await listenLocal((request, response) => {
    const requested = new URL(request.url ?? "/", "http://127.0.0.1");
    const path = requested.pathname;
    if (request.method !== "GET") return sendText(response, 405, "text/plain", "GET only\n");
    if (path === "/") return sendText(response, 200, "text/html", page);
    if (path === "/elk.js")
      return elk.ok
        ? sendText(response, 200, "text/javascript", elk.script)
        : sendText(response, 404, "text/plain", `${elk.reason}\n`);
    if (path === "/machines.json") return sendText(response, 200, "application/json", JSON.stringify(graphs));
    if (path === "/recipes.json")
      return sendText(response, 200, "application/json", JSON.stringify(recipes.diagrams()));
    if (path === "/log.json") return sendTurnLog(response, requested.searchParams, turnLog);
    if (path === "/events")
      return hub.attach(request, response, [
        { event: "hello", data: { machines: graphs.map(({ key }) => key) } },
        ...[...processes].map((process) => ({ event: "process", data: { process } })),
        ...recipes.diagrams().map((data) => ({ event: "recipe", data })),
        ...actors.replay().map((data) => ({ event: "actor", data })),
        ...events.map((data) => ({ event: "turn-event", data })),
      ]);
    sendText(response, 404, "text/plain", "not found\n");
  }, options.port).catch((error: unknown) => {
    inspection.unsubscribe();
    stopEvents.abort();
    recipes.close();
    throw error;
  });

  return {
    url,
    close: async () => {
      inspection.unsubscribe();
      stopEvents.abort();
      recipes.close();
      hub.close();
      await Promise.all([closeServer(server), following]);
    },
  };
}

/** `/log.json?session=S&turn=N`: the turn's stored events as a JSON array; a bad query is a 400, NATS trouble a 503, each one line. */
function sendTurnLog(
  response: ServerResponse,
  query: URLSearchParams,
  turnLog: (turn: TurnRef) => Promise<unknown[]>,
): void {
  const session = SessionId.safeParse(query.get("session") ?? "");
  const turn = Number(query.get("turn"));
  if (!session.success || !Number.isInteger(turn) || turn < 1) {
    sendText(response, 400, "text/plain", "give ?session=<session id>&turn=<a number from 1>\n");
    return;
  }
  turnLog({ session_id: session.data, turn_id: turn }).then(
    (events) => sendText(response, 200, "application/json", `${JSON.stringify(events, null, 1)}\n`),
    (error: unknown) => sendText(response, 503, "text/plain", `cannot read the event log: ${messageOf(error)}\n`),
  );
}

/** A turn event as the page gets it: a RECIPE_STARTED without its document (the page draws the recipe from its diagram). */
function forPage(event: TurnEventLike): TurnEventLike {
  if (event.kind !== "RECIPE_STARTED" || typeof event.payload !== "object" || event.payload === null) return event;
  const { document: _, ...payload } = event.payload as Record<string, unknown>;
  return { ...event, payload };
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

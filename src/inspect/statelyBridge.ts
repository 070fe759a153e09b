import type { Server } from "node:http";
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import type { AnyStateMachine } from "xstate";
import { importOptional } from "../optionalPackages.ts";
import { closeServer, listenLocal, sendText } from "../viewer/localHttp.ts";
import { SseHub } from "../viewer/sseHub.ts";
import type { InspectionRecord } from "./record.ts";
import { statelyBridgePage } from "./statelyBridgePage.ts";

/**
 * What `conclave inspect` runs: a bridge on 127.0.0.1 that serves the page
 * embedding the Stately inspector and streams it the collected inspection
 * events. (@statelyai/inspect's own `createInspectorServer` listens on every
 * interface and has no host option, so it is not used.) @statelyai/inspect
 * is an optional package, loaded when the bridge starts: without it, a
 * "missing_dependency" ConclaveError.
 */
export interface StatelyBridge {
  url: string;
  push(record: InspectionRecord): void;
  close(): Promise<void>;
}

export async function startStatelyBridge(machines: Iterable<AnyStateMachine>, port: number): Promise<StatelyBridge> {
  const { StatelyFeed } = await importOptional(
    "the Stately inspector bridge",
    ["@statelyai/inspect"],
    () => import("./statelyFeed.ts"),
  );
  const hub = new SseHub();
  const feed = new StatelyFeed(machines, (event: StatelyInspectionEvent) => hub.send("stately", event));
  const { server, url }: { server: Server; url: string } = await listenLocal((request, response) => {
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    if (request.method !== "GET") return sendText(response, 405, "text/plain", "GET only\n");
    if (path === "/") return sendText(response, 200, "text/html", statelyBridgePage());
    if (path === "/events")
      return hub.attach(
        request,
        response,
        feed.replay().map((data) => ({ event: "stately", data })),
      );
    sendText(response, 404, "text/plain", "not found\n");
  }, port);
  return {
    url,
    push: (record) => feed.push(record),
    close: async () => {
      hub.close();
      await closeServer(server);
    },
  };
}

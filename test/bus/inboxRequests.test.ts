/**
 * Requests over a connection's own inbox (`InboxRequests`, what `requestJson`
 * sends with), against a real server with the roles' permissions: a reply
 * answers its request, nobody serving is `no_responders`, and a publish the
 * server refuses fails its own request at once, not at its timeout, leaving
 * the others waiting.
 */
import { PermissionViolationError } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { encodeJson } from "../../src/bus/codec.ts";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { requestJson } from "../../src/bus/request.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
const Echo = z.object({ echo: z.string() });
// Long enough that a refusal reported only at the timeout would fail the test by its own timeout.
const WAIT = { timeoutMs: 60_000 };

describe("requests over the connection's own inbox", () => {
  it("get their replies, and no_responders when nobody serves the subject", async () => {
    const server = await nats.connect("runner");
    const sub = server.subscribe(subjects.memorySearch("served"), {
      callback: (_, msg) => {
        msg.respond(encodeJson({ echo: new TextDecoder().decode(msg.data) }));
      },
    });
    await server.flush();
    const client = await nats.connect("client");
    const replies = await Promise.all(
      ["a", "b", "c"].map((text) => requestJson(client, subjects.memorySearch("served"), text, Echo, WAIT)),
    );
    expect(replies).toEqual([{ echo: '"a"' }, { echo: '"b"' }, { echo: '"c"' }]);
    const nobody = await requestJson(client, subjects.memorySearch("nobody"), {}, Echo, WAIT).catch((e) => e);
    expect(nobody).toBeInstanceOf(RemoteCallError);
    expect((nobody as RemoteCallError).code).toBe("no_responders");
    sub.unsubscribe();
  });

  it("fail at once when the server refuses the publish, and only the refused one", async () => {
    const server = await nats.connect("runner");
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    // This one is answered only after the refusal has come back.
    server.subscribe(subjects.memorySearch("later"), {
      callback: (_, msg) => void answered.then(() => msg.respond(encodeJson({ echo: "later" }))),
    });
    await server.flush();
    const client = await nats.connect("client");
    const waiting = requestJson(client, subjects.memorySearch("later"), {}, Echo, WAIT);
    // A client may not call an agent: the server refuses the publish.
    const refused = await requestJson(client, subjects.agent("inbox.test"), {}, Echo, WAIT).catch((e) => e);
    expect(refused).toBeInstanceOf(PermissionViolationError);
    expect((refused as PermissionViolationError).subject).toBe(subjects.agent("inbox.test"));
    answer();
    await expect(waiting).resolves.toEqual({ echo: "later" });
  });
});

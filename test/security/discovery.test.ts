import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { DEFAULT_EVENT_STREAMS, eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

/**
 * Services discovery (`$SRV.PING|INFO|STATS`) is answered by each service
 * (src/bus/service.ts), with the responder's publish rights, on whatever
 * reply subject the request names. Even the operator, who may send it, cannot
 * make the runner or a worker write an answer into a data subject: discovery
 * answers only inbox replies.
 */
const nats = useNatsServer();
useInProcessStack(nats);

describe("services discovery", () => {
  it("answers the operator on its inbox, and never on a data subject the request names", async () => {
    const operator = await connect({
      servers: nats.url,
      user: "operator",
      pass: "conclave-dev-operator",
      inboxPrefix: "_INBOX_operator",
    });
    try {
      const forged = subjects.turnEvents("forged", 1, DEFAULT_EVENT_STREAMS);
      for (const verb of ["PING", "INFO", "STATS"])
        operator.publish(`$SRV.${verb}`, new Uint8Array(), { reply: forged });
      // Answered in order on each subscription: once these are answered, the forged ones were handled.
      const answers = await operator.requestMany("$SRV.PING", new Uint8Array(), { maxWait: 1_000, maxMessages: 3 });
      const names = [];
      for await (const answer of answers) names.push((answer.json() as { name: string }).name);
      expect(names).toContain("conclave-runner");
      expect(names).toContain("conclave-agents");
      const nc = await nats.connect("runner");
      const count = await eventStreamCount(nc);
      await jetstream(nc).publish(subjects.turnEvents("control", 1, count), new Uint8Array([123, 125]));
      const info = await (await jetstreamManager(nc)).streams.info(eventStreamOf("control", count), {
        subjects_filter: "conclave.events.>",
      });
      expect(Object.keys(info.state.subjects ?? {})).toEqual([subjects.turnEvents("control", 1, count)]);
    } finally {
      await operator.close();
    }
  });
});

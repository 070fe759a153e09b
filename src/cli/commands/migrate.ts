import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { setting } from "../../config/load.ts";
import { checkEventStreams } from "../../eventlog/eventStreams.ts";
import { migrateEvents } from "../../eventlog/migrateEvents.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave migrate: bring a deployment's stores over to this version

Usage: conclave migrate events [--streams S]

events   moves an event log made before it had several streams (one stream,
         CONCLAVE_EVENTS, from 0.1) over to S streams (CONCLAVE_EVENTS_0 …),
         each session's events to the stream of its partition, in order, then
         deletes the old stream. Stop the runners first: a runner refuses to
         start while the old stream is there. Interrupted, run it again: it
         goes on after the last message copied. Positions (stream sequences)
         and stored times are the new streams' (docs/operations.md,
         "Scaling out"). Nothing to move: says so and exits 0.

  --streams S   the new log's stream count, 1 to 16; fixed from then on
                [CONCLAVE_EVENT_STREAMS, else 3]`;

export default defineCommand({
  help,
  flags: { streams: { type: "string" } },
  positionals: true,
  role: "runner",
  async run({ values, positionals, bus }) {
    const [what, ...rest] = positionals;
    if (what !== "events" || rest.length > 0) throw new UsageError("usage: conclave migrate events [--streams S]");
    const streams =
      values.streams === undefined ? setting(process.env, "CONCLAVE_EVENT_STREAMS") : Number(values.streams);
    if (streams !== undefined) {
      try {
        checkEventStreams(streams);
      } catch (error) {
        throw new UsageError(`--streams: ${(error as Error).message}`);
      }
    }
    const nc = await bus();
    const result = await migrateEvents(jetstream(nc), await jetstreamManager(nc), {
      ...(streams !== undefined ? { streams } : {}),
      onProgress: (copied, total) => console.error(`copied ${copied} of ${total} messages`),
    });
    if (!result) {
      console.log("nothing to migrate: the event log has no one-stream CONCLAVE_EVENTS");
      return EXIT.ok;
    }
    console.log(
      `moved the event log over to ${result.streams} streams: ${result.copied} messages copied (${result.found} stored); CONCLAVE_EVENTS deleted`,
    );
    return EXIT.ok;
  },
});

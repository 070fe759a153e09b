// Another process: reads a session's events from a position onwards (what writer.js noted).
import { readFileSync } from "node:fs";
import { connect } from "conclave/client";

const { session, fromSeq } = JSON.parse(readFileSync("last-run.json", "utf8"));
const client = await connect();
for await (const { position, event } of client.events(session, { fromSeq })) {
  console.log(`${String(position).padStart(6)}  turn ${event.turn_id}  #${event.seq}  ${event.kind}`);
}
await client.close();

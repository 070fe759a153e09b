// Sends two turns in a new session, then notes where turn 2 starts in the event log for reader.js.
import { writeFileSync } from "node:fs";
import { connect } from "conclave/client";

const client = await connect();
const session = `history-${Date.now()}`;
for (const text of ["Hi! My name is Ana.", "I'm a bit stressed about tomorrow."]) {
  const result = await client.submit(session, text).result;
  console.log(`turn ${result.turnId}: ${result.outcome.status}: ${result.response}`);
}
// Positions are the event log's own sequence numbers: find the last one of turn 1.
let afterTurnOne = 0;
for await (const { position } of client.events(session, { turnId: 1 })) afterTurnOne = position;
writeFileSync("last-run.json", JSON.stringify({ session, fromSeq: afterTurnOne + 1 }));
console.log(`wrote last-run.json: read ${session} from position ${afterTurnOne + 1}`);
await client.close();

// Writes a task ledger through the client API, asks the council what to do next (the organiser
// agent sees the ledgers and records a fact), then reads the ledgers back and replays them from the log.
import { connect } from "conclave/client";

const client = await connect();
const session = `party-${Date.now()}`;

await client.task.setSpec(session, {
  goal: "Organise Ana's birthday party",
  acceptance: ["venue booked", "guests invited"],
});
const venue = await client.task.addItem(session, { title: "Book the venue" });
await client.task.addItem(session, { title: "Send the invitations" });
await client.task.recordBlocker(session, { message: "Waiting for the guest list", item_id: venue.id });
await client.truth.upsertFact(session, { statement: "The party is on 14 March", evidence: ["Ana's message"] });

const turn = await client.submit(session, "What should I do next? Remember that the budget is 300 euros.").result;
console.log(`turn ${turn.turnId}: ${turn.outcome.status}; reply: ${turn.response}`);

const digest = await client.truth.getLedgerDigest(session);
console.log(digest.text);
for (const fact of (await client.truth.getState(session)).facts) console.log(`fact by ${fact.by}: ${fact.statement}`);

const replay = await client.ledgers.replay(session);
console.log(
  `replayed ${replay.rebuilt.events} ledger events from the log: ${replay.matches ? "they match" : "they differ"}`,
);
await client.close();

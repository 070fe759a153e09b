// A TypeScript worker hosting a typed agent, and a client streaming a turn, in one program.
// `npm start` runs it against a local Conclave (conclave up --exec).
import { connect } from "conclave/client";
import { type AgentOutputOf, startWorker } from "conclave/worker";
import { moodTracker } from "./agents.js";

type Mood = AgentOutputOf<typeof moodTracker>;

// Connects to $CONCLAVE_NATS_URL (set by `conclave up --exec`) as the worker role.
const worker = await startWorker({ agents: [moodTracker] });
const client = await connect();
try {
  const turn = client.submit(`mood-${Date.now()}`, "I'm so stressed about my exam tomorrow, I can't sleep");
  for await (const event of turn) {
    if (event.kind === "TURN_STAGE_CHANGED") console.log(`▸ ${event.payload.stage}`);
    if (event.kind === "AGENT_COMPLETED" && event.payload.agent_id === moodTracker.manifest.id) {
      const reading = event.payload.output as Mood; // checked against MoodReading on the worker and the runner
      console.log(`  mood.tracker: ${reading.mood} (intensity ${reading.intensity.toFixed(2)})`);
    }
    if (event.kind === "STREAM_CHUNK" && event.payload.stream_id === "default")
      process.stdout.write(event.payload.delta);
    if (event.kind === "STREAM_END" && event.payload.stream_id === "default") process.stdout.write("\n");
  }
  const result = await turn.result;
  console.log(`outcome: ${result.outcome.status}; reply: ${result.response}`);
} finally {
  await client.close();
  await worker.stop();
}

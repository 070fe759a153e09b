// A worker hosting an MCP server's tools next to an agent of its own, and a recipe whose agent
// reads a note through them. `npm start` runs it against a local Conclave (conclave up --exec).
import { fileURLToPath } from "node:url";
import { defineAgent } from "conclave";
import { connect } from "conclave/client";
import { startWorker } from "conclave/worker";
import { z } from "zod";

const notes = fileURLToPath(new URL("./notes", import.meta.url));
const filesServer = fileURLToPath(new URL("./filesServer.js", import.meta.url));

// The agent reads the note the run asks about through the MCP tool the recipe offers it.
const reader = defineAgent({
  name: "notes.reader",
  description: "Answers from the user's notes",
  output: z.object({ note: z.string(), answer: z.string() }),
  async run(ctx) {
    const [tool] = ctx.tools.available;
    if (!tool) throw new Error("the recipe offers no tool");
    const result = await ctx.tools.call(tool.name, { path: `${notes}/${ctx.recipe?.inputs.note}` });
    const text = typeof result === "string" ? result : String(result?.content ?? JSON.stringify(result));
    return { note: text.trim(), answer: /rain/i.test(text) ? "Take the umbrella." : "No rain in your notes." };
  },
});

// The same `mcpServers` format MCP clients use (`conclave worker --mcp servers.json` reads it from a file).
const worker = await startWorker({
  agents: [reader],
  mcpServers: { files: { command: process.execPath, args: [filesServer, notes] } },
});
console.log(`worker: agents ${worker.agents.join(", ")}; tools ${worker.tools.join(", ")}`);

const recipe = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "read-a-note", description: "Answer a question from a note" },
  interface: { inputs: { type: "object", properties: { note: { type: "string" } }, required: ["note"] } },
  definitions: {
    // Bound to the MCP server's tool by its uri: mcp://<server>/<tool>.
    read_note: {
      type: "tool",
      id: "read_note",
      name: "read_note",
      uri: "mcp://files/read_text_file",
      risk_level: "safe",
    },
    reader: { type: "agent", id: "notes.reader", tools: ["read_note"] },
  },
  workflow: { start: "read", steps: { read: { type: "agent", agent: "reader", inputs: { note: "note" } } } },
};

const client = await connect();
try {
  const run = await client.run(`notes-${Date.now()}`, recipe, {
    inputs: { note: "trip.md" },
    onEvent: (event) => {
      if (event.kind === "TOOL_CALL_FINISHED") console.log(`tool ${event.payload.tool}: finished`);
    },
  });
  if (run.status !== "completed") throw new Error(`the run ${run.status}`);
  console.log(`output: ${JSON.stringify(run.output.read)}`);
} finally {
  await client.close();
  await worker.stop();
}

/**
 * What `conclave init` writes (src/cli/commands/init.ts): the files of a new
 * project, an agent with a tool, a one-step recipe, a test of the agent, a
 * README, and the package.json fields that run them. Kept apart from the
 * command so the texts read as the files they become.
 */

/** The agent module: `--agents` hosts its agent and, beside it, its `defineTool` export. */
export const AGENT_FILE = "agents/echo.js";
/** The one-step recipe calling the agent. */
export const RECIPE_FILE = "recipes/echo.yaml";
/** The agent's test, run by `node --test`. */
export const TEST_FILE = "test/echo.test.js";

/** The session `npm run send` talks in. */
const SESSION = "hello";

/** The npm scripts the scaffold adds: name → command. */
export const SCRIPTS: Record<string, string> = {
  // Your agents alone answer (--pipeline agents): the reply is the agent's own, not the built-in pipeline's.
  dev: `conclave dev --agents ./${AGENT_FILE} --pipeline agents`,
  start: `conclave up --agents ./${AGENT_FILE} --pipeline agents`,
  test: "node --test",
  send: `conclave send --session ${SESSION} "Hello there, how are you?"`,
  recipe: `conclave run ${RECIPE_FILE} --input '{"message": "Hello there, how are you?"}'`,
};

/** `npm init -y`'s placeholder test script: replaced as if absent. */
export const NPM_PLACEHOLDER_TEST = 'echo "Error: no test specified" && exit 1';

const agentModule = `// An agent and the tool it calls. \`conclave up --agents ./${AGENT_FILE}\` hosts both:
// the agent, and every defineTool export of this module. See Conclave's docs/agents.md.
import { defineAgent, defineTool } from "conclave/worker";
import { z } from "zod";

/** A tool: counts the words of a text. Safe (it reads nothing, writes nothing). */
export const countWords = defineTool({
  name: "count_words",
  description: "Counts the words of a text.",
  risk: "safe",
  input: z.object({ text: z.string() }),
  output: z.object({ words: z.number() }),
  run: ({ text }) => ({ words: text.split(/\\s+/).filter(Boolean).length }),
});

/** The agent: echoes the message back with its word count, which it asks the tool for. */
export const echo = defineAgent({
  name: "app.echo", // served on conclave.agent.app.echo; a recipe names it in agent_ref
  description: "Echoes the user's message and says how many words it has.",
  priority: "ALWAYS_ON", // asked on every turn
  tools: ["count_words"], // the tools it may call
  output: z.object({
    words: z.number(),
    proposals: z.array(z.object({ kind: z.literal("say"), text: z.string() })),
  }),
  async run(ctx) {
    const message = ctx.input.user_message;
    const { words } = await ctx.tools.call("count_words", { text: message });
    return { words, proposals: [{ kind: "say", text: \`You said "\${message}" (\${words} words).\` }] };
  },
});
`;

const recipe = `# One step: the app.echo agent answers the message, with its count_words tool.
# \`npm run recipe\` runs it (with \`npm start\` running): the run's output is the
# agent's own answer. The workflow shape of the Coreason format, whose agent
# definitions list the tools the agent may call (see Conclave's docs/recipes.md).
apiVersion: coreason.ai/v2
kind: Recipe
metadata:
  name: echo
  description: Echo a message with its word count.
interface:
  inputs:
    type: object
    properties:
      message: { type: string, minLength: 1 }
    required: [message]
definitions:
  count_words: { type: tool, id: count_words, name: count_words, risk_level: safe, description: counts the words of a text }
  echo: { type: agent, id: app.echo, tools: [count_words] }
workflow:
  start: echo
  steps:
    echo:
      type: agent
      agent: echo
      inputs: { message: message }
`;

const agentTest = `// The agent's test: its run called directly, its tool calls answered by the tool itself.
// \`npm test\` (node --test) runs it, with no NATS and no Conclave process.
import assert from "node:assert/strict";
import { test } from "node:test";
import { countWords, echo } from "../${AGENT_FILE}";

/** What a worker gives run(ctx), reduced to what this agent reads. */
function contextFor(message) {
  const calls = [];
  return {
    calls,
    ctx: {
      input: { user_message: message },
      tools: {
        async call(name, args) {
          assert.equal(name, "count_words");
          calls.push(args);
          return countWords.run(countWords.input.parse(args), {});
        },
      },
      stream() {},
      signal: new AbortController().signal,
    },
  };
}

test("the tool counts words", () => {
  assert.deepEqual(countWords.run({ text: "  one two   three " }, {}), { words: 3 });
});

test("the agent echoes the message with its word count, asking the tool", async () => {
  const { ctx, calls } = contextFor("Hello there, how are you?");
  const output = echo.output.parse(await echo.run(ctx)); // the check a worker makes of every answer
  assert.deepEqual(calls, [{ text: "Hello there, how are you?" }]);
  assert.equal(output.words, 5);
  assert.deepEqual(output.proposals, [{ kind: "say", text: 'You said "Hello there, how are you?" (5 words).' }]);
});
`;

const readme = `# A Conclave project

Made by \`conclave init\`. An agent with a tool (\`${AGENT_FILE}\`), a one-step recipe that
calls it (\`${RECIPE_FILE}\`), and a test of the agent (\`${TEST_FILE}\`).

\`\`\`sh
npm install          # conclave and zod
npm test             # the agent's test (node --test): no NATS needed
npm run dev          # conclave dev: NATS, a runner, your agent, the viewer and the gateway (keep it running);
                     # edit ${AGENT_FILE} and the next turn runs the new code
npm run send         # in another terminal: a turn in session "${SESSION}"; the events show the tool call
npm run recipe       # the one-step recipe: its output is the agent's own answer
\`\`\`

| script | runs |
| --- | --- |
${Object.entries(SCRIPTS)
  .map(
    ([name, command]) =>
      `| \`npm ${name === "start" || name === "test" ? name : `run ${name}`}\` | \`${command.replaceAll("|", "\\|")}\` |`,
  )
  .join("\n")}

\`npm run dev\` and \`npm start\` (\`conclave up\`, without the viewer and the reload) run your
agents alone (\`--pipeline agents\`): the reply to \`npm run send\` is your agent's own answer.
Without that option Conclave runs its built-in pipeline (14 agents, the council, the voice and the
critics), and your agent's proposal is one voice among theirs.
\`npx conclave doctor\` lists the optional features (LLM mode, the chat, the viewer's
diagrams...) and the one \`npm install\` line that adds them. Conclave runs as ES modules:
\`package.json\` says \`"type": "module"\`.
`;

/** The files `conclave init` writes, path (relative to the project) → text; package.json apart. */
export const SCAFFOLD_FILES: Record<string, string> = {
  [AGENT_FILE]: agentModule,
  [RECIPE_FILE]: recipe,
  [TEST_FILE]: agentTest,
  "README.md": readme,
};

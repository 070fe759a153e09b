import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { type AgentAnnouncement, announceAgents } from "../../src/agents/announcement.ts";
import { AgentDirectory } from "../../src/agents/directory.ts";
import { encodeJson } from "../../src/bus/codec.ts";
import { subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { AgentManifest, AgentReply } from "../../src/contracts/agent.ts";
import { fromRecipeJsonSchema } from "../../src/recipes/jsonSchema.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { liveness } from "./hostileHelpers.ts";

/**
 * A worker announces an agent whose output schema holds a pattern that
 * backtracks catastrophically (`^(a+)+$`), then answers a string made to
 * trigger it. Checked with a JS RegExp, that answer would block the runner's
 * event loop for about a minute (each further `a` doubles it): every turn
 * stalls. Wire patterns are run by RE2, which cannot backtrack: the check
 * completes and rejects the answer, and the runner goes on. Patterns RE2
 * cannot run (backreferences, lookaround) are refused with the announcement.
 * On a RegExp-based check, the tests below hang until vitest's timeout.
 */
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

const EVIL_PATTERN = "^(a+)+$";
const EVIL_ANSWER = `${"a".repeat(31)}!`;
const NO_CONTRIBUTION = {
  claims: [],
  supports: [],
  opposes: [],
  withdraws: [],
  concedes: [],
  proposals: [],
  stance_delta: {},
};

const manifest = (id: string, pattern: string): AgentManifest => ({
  id,
  agency: "evil",
  priority: "ALWAYS_ON",
  triggers: [],
  cooldown_s: 0,
  token_budget: 0,
  description: "answers a string made to make its own pattern backtrack",
  output_schema: { type: "string", pattern },
});

describe("a schema's pattern from the wire, checked in the test process", () => {
  it("the directory's check of the evil answer completes and rejects it", async () => {
    const announcer = await announceAgents(await nats.connect("worker"), "w-evil-unit", [
      manifest("evil.unit", EVIL_PATTERN),
    ]);
    const directory = await AgentDirectory.open(await nats.connect("runner"));
    try {
      const schema = directory.outputSchema("evil.unit");
      expect(schema).toBeDefined();
      const checked = schema!.safeParse(EVIL_ANSWER);
      expect(checked.success).toBe(false);
      expect(checked.error?.issues[0]?.message).toMatch(/must match pattern "\^\(a\+\)\+\$"/);
      expect(schema!.safeParse("aaaa").success).toBe(true);
    } finally {
      directory.close();
      await announcer.stop();
    }
  });

  it("a recipe's interface schema checks its patterns the same way", () => {
    const inputs = fromRecipeJsonSchema({
      type: "object",
      properties: { code: { type: "string", pattern: EVIL_PATTERN } },
      required: ["code"],
    });
    expect(inputs.safeParse({ code: EVIL_ANSWER }).success).toBe(false);
    expect(inputs.safeParse({ code: "aaa" }).success).toBe(true);
    expect(() =>
      fromRecipeJsonSchema({ type: "object", properties: { code: { type: "string", pattern: "(a+)\\1" } } }),
    ).toThrow(/linear-time engine/);
  });

  it.each([
    ["a lookahead", "^(?=a)(a+)+$"],
    ["a backreference", "^(a+)\\1$"],
    ["a lookbehind", "(?<=a)b"],
  ])(
    "refuses an announcement whose schema holds %s, in one line, and keeps none of its agents",
    async (_name, pattern) => {
      const problems: string[] = [];
      const listener = await nats.connect("runner");
      const directory = await AgentDirectory.open(listener, {
        onInvalid: (message) => problems.push(message),
        quietMs: 20,
      });
      try {
        const worker = await nats.connect("worker");
        const announcement: AgentAnnouncement = {
          worker: "w-unrunnable",
          agents: [manifest("evil.plain", EVIL_PATTERN), manifest("evil.unrunnable", pattern)],
          tools: [],
          heartbeat_ms: 5_000,
        };
        worker.publish(subjects.agentsAnnounce, encodeJson(announcement));
        await worker.flush();
        await listener.flush();
        expect(problems).toHaveLength(1);
        expect(problems[0]).not.toMatch(/[\r\n]/);
        expect(problems[0]).toMatch(/agents\.1\.output_schema.*cannot run on a linear-time engine/);
        // The whole announcement is ignored, its valid agent with it.
        expect(directory.roster().map((agent) => agent.id)).not.toContain("evil.plain");
        expect(directory.manifest("evil.unrunnable")).toBeUndefined();
      } finally {
        directory.close();
      }
    },
  );
});

describe("an evil worker against a running stack", () => {
  let stack: ConclaveProcess[] = [];
  let client: NatsConnection;
  beforeAll(async () => {
    stack = await Promise.all([
      processes.spawn("agents", ["worker", "--agents", "*"]),
      processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
      processes.spawn("runner", ["runner"]),
    ]);
    client = await nats.connect("client");
  });

  const turn = async (session: string) =>
    (await watchTurn(client, await submitTurn(client, session, { text: "I'm stressed about my deadline" }), () => {}))
      .payload;

  it("does not stall the runner: the evil answer is rejected by its schema, and turns go on", async () => {
    const before = liveness(stack);
    const worker = await nats.connect("worker");
    let asked = 0;
    worker.subscribe(subjects.agent("evil.stack"), {
      callback: (error, msg) => {
        if (error) return;
        asked++;
        const reply: AgentReply = {
          agent_id: "evil.stack",
          output: EVIL_ANSWER,
          contribution: NO_CONTRIBUTION,
          elapsed_ms: 1,
          worker: "evil-worker",
        };
        msg.respond(encodeJson(reply));
      },
    });
    const announcer = await announceAgents(worker, "evil-worker", [manifest("evil.stack", EVIL_PATTERN)]);
    try {
      // The evil turn, and a normal one submitted right after it on another session: both run to their end.
      const [evil, next] = await Promise.all([turn("regex-dos-evil"), turn("regex-dos-next")]);
      expect(asked).toBeGreaterThanOrEqual(1);
      for (const completed of [evil, next]) {
        expect(completed.outcome.status).toBe("PartialSuccess");
        const warnings = completed.outcome.status === "PartialSuccess" ? completed.outcome.warnings : [];
        expect(warnings).toContainEqual(
          expect.objectContaining({
            subject: "evil.stack",
            code: "invalid_agent_output",
            message: expect.stringMatching(/must match pattern/),
          }),
        );
        expect(completed.response.length).toBeGreaterThan(0);
      }
    } finally {
      await announcer.stop();
    }
    // Once the evil worker is gone, a normal turn is complete; no process restarted.
    const normal = await turn("regex-dos-after");
    expect(normal.outcome.status).toBe("Complete");
    expect(liveness(stack)).toEqual(before);
  }, 45_000);
});

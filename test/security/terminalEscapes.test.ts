import { Writable } from "node:stream";
import { renderToString } from "ink";
import { createElement as h } from "react";
import { beforeAll, describe, expect, it } from "vitest";
import { initialChatState } from "../../src/chat/state.ts";
import { ChatView } from "../../src/chat/view.ts";
import { printRunResult } from "../../src/cli/recipeResult.ts";
import { createEventPrinter } from "../../src/cli/render.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { printable } from "../../src/client/printable.ts";
import type { EngineEvent, EventBody } from "../../src/contracts/events.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * What a client stores (a turn's text, a ledger statement) is shown back to
 * people by the CLI and the chat: any terminal control sequence in it is
 * shown as a visible escape, never written to the terminal raw.
 */

/** Retitles the window (OSC 0, ended by BEL), then clears the screen (CSI 2 J). */
const HOSTILE = "\u001b]0;pwned\u0007\u001b[2J";
/** How it is shown. */
const SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J";
/** What must never reach a terminal raw: C0 controls but newline and tab, DEL, C1, bidi overrides and isolates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** No ESC and no BEL byte: nothing a terminal would act on. */
function expectNoEscOrBel(text: string): void {
  expect(text).not.toContain("\u001b");
  expect(text).not.toContain("\u0007");
}

/** A writable that keeps what it was given. */
function sink(): { stream: NodeJS.WritableStream; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => chunks.join("") };
}

const event = (body: EventBody, seq = 0): EngineEvent =>
  ({ session_id: "s", turn_id: 1, seq, ts_monotonic: seq, ...body }) as EngineEvent;

describe("printable", () => {
  it("shows control characters, DEL, C1 controls and bidi overrides as visible escapes", () => {
    expect(printable(HOSTILE)).toBe(SHOWN);
    expect(printable("a\u0000b\u007fc\u009bd\u0085e")).toBe("a\\x00b\\x7fc\\x9bd\\x85e");
    expect(printable("safe \u202eexe.txt\u202c and \u2066x\u2069")).toBe(
      "safe \\u202eexe.txt\\u202c and \\u2066x\\u2069",
    );
    expect(printable("over\rwrite")).toBe("over\\x0dwrite");
  });

  it("keeps newlines and tabs where a newline is legitimate, and escapes newlines where it is not", () => {
    expect(printable("line one\n\tline two\r\nthree")).toBe("line one\n\tline two\nthree");
    expect(printable("fact\nfake-id  active  forged", { newlines: false })).toBe("fact\\x0afake-id  active  forged");
    expect(printable("a\tb", { newlines: false })).toBe("a\tb");
  });

  it("leaves every other character as it is, so applying it twice changes nothing", () => {
    const text = "Zoë's café — 東京 🚀 «ok» ✔ ▸ \\x1b already shown";
    expect(printable(text)).toBe(text);
    expect(printable(printable(HOSTILE))).toBe(SHOWN);
    const everyCharacter = Array.from({ length: 0x3000 }, (_, code) => String.fromCharCode(code)).join("");
    expect(printable(everyCharacter, { newlines: false })).not.toMatch(RAW_CONTROL);
    expect(printable(everyCharacter, { newlines: false })).not.toContain("\n");
  });
});

describe("what the CLI renders from events and results", () => {
  it("the event printer shows a hostile message, claim and streamed reply as text", () => {
    const out = sink();
    const print = createEventPrinter(false, out.stream);
    print(event({ kind: "TURN_STARTED", payload: { user_input: HOSTILE, turn_id: 1 } }));
    print(event({ kind: "STREAM_START", payload: { stream_id: "default", content_type: "text/plain", attempt: 1 } }));
    print(event({ kind: "STREAM_CHUNK", payload: { stream_id: "default", index: 0, delta: HOSTILE } }));
    print(event({ kind: "STREAM_END", payload: { stream_id: "default", chunks: 1 } }));
    print(
      event({ kind: "STREAM_START", payload: { stream_id: "acme.a:notes", content_type: "text/plain", attempt: 1 } }),
    );
    print(event({ kind: "STREAM_CHUNK", payload: { stream_id: "acme.a:notes", index: 0, delta: "\u202egnp.exe" } }));
    print(event({ kind: "STREAM_END", payload: { stream_id: "acme.a:notes", chunks: 1 } }));
    const text = out.text();
    expect(text).not.toMatch(RAW_CONTROL);
    expect(text).toContain(`"${SHOWN}"`);
    expect(text).toContain(`voice › ${SHOWN}`);
    expect(text).toContain("acme.a:notes › \\u202egnp.exe");
  });

  it("--json output is JSON.stringify's: C0 controls arrive escaped", () => {
    const out = sink();
    createEventPrinter(true, out.stream)(event({ kind: "TURN_STARTED", payload: { user_input: HOSTILE, turn_id: 1 } }));
    expectNoEscOrBel(out.text());
    expect(JSON.parse(out.text()).payload.user_input).toBe(HOSTILE);
  });

  it("a recipe run's result, prompt and failure are shown as text", () => {
    const out = sink();
    const err = sink();
    printRunResult(
      {
        status: "completed",
        sessionId: "s",
        turnId: 1,
        response: "",
        output: { answer: HOSTILE, c1: "\u009b31m" },
        outcome: {
          status: "PartialSuccess",
          warnings: [{ stage: "recipe", code: "agent_failed", message: HOSTILE }],
        },
      },
      { out: out.stream, err: err.stream },
    );
    printRunResult(
      {
        status: "suspended",
        sessionId: "s",
        turnId: 2,
        node: "review",
        prompt: HOSTILE,
      },
      { out: out.stream, err: err.stream },
    );
    expect(out.text()).not.toMatch(RAW_CONTROL);
    expect(err.text()).not.toMatch(RAW_CONTROL);
    expect(out.text()).toContain("\\u001b]0;pwned"); // the JSON's own escape, shown as it is
    expect(out.text()).toContain("\\x9b31m");
    expect(out.text()).toContain(`suspended at 'review': ${SHOWN}`);
    expect(err.text()).toContain(`warning: agent_failed: ${SHOWN}`);
  });

  it("the chat draws messages and replies as text", () => {
    const state = {
      ...initialChatState("s"),
      history: [
        { id: 1, role: "user" as const, text: HOSTILE },
        { id: 2, role: "assistant" as const, text: `reply ${HOSTILE}` },
      ],
    };
    const screen = renderToString(h(ChatView, { state }), { columns: 120 });
    // ink may colour the screen (SGR escapes of its own), but nothing of the messages' own is raw.
    for (const raw of ["\u0007", "\u202e", "\u001b]", "\u001b[2J"]) expect(screen).not.toContain(raw);
    expect(screen).toContain(`you › ${SHOWN}`);
    expect(screen).toContain(`conclave › reply ${SHOWN}`);
  });
});

describe("conclave events and conclave truth|task state on a real stack", () => {
  const nats = useNatsServer();
  const processes = useConclaveProcesses(() => nats.url);
  let client: ConclaveClient;
  const SESSION = "escapes";

  beforeAll(async () => {
    await Promise.all([
      processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
      processes.spawn("runner", ["runner"]),
    ]);
    client = await connect({ nc: await nats.connect("client") });
  });

  it("print what a client submitted and stored with its control characters shown, not obeyed", async () => {
    const turn = client.submit(SESSION, `hello ${HOSTILE}`);
    for await (const _ of turn) {
      // drain the turn
    }
    expect((await turn.result).outcome.status).not.toBe("Failed");
    await client.truth.upsertFact(SESSION, { statement: `the key is ${HOSTILE}`, evidence: [`\u202eevidence`] });
    await client.task.addItem(SESSION, { title: `deploy ${HOSTILE}` });

    const events = await runConclave(nats.url, ["events", "--session", SESSION]);
    expect(events.code).toBe(0);
    expect(events.stdout).toContain(`turn ${SESSION}/1: "hello ${SHOWN}"`);
    expectNoEscOrBel(events.stdout);
    expect(events.stdout).not.toMatch(RAW_CONTROL);

    const truth = await runConclave(nats.url, ["truth", "state", "--session", SESSION]);
    expect(truth.code).toBe(0);
    expect(truth.stdout).toContain(`the key is ${SHOWN}`);
    expect(truth.stdout).toContain("[evidence: \\u202eevidence]");
    expectNoEscOrBel(truth.stdout);
    expect(truth.stdout).not.toMatch(RAW_CONTROL);

    const task = await runConclave(nats.url, ["task", "state", "--session", SESSION]);
    expect(task.code).toBe(0);
    expect(task.stdout).toContain(`deploy ${SHOWN}`);
    expect(task.stdout).not.toMatch(RAW_CONTROL);

    // --json is JSON.stringify's: escaped already, and the stored text comes back intact.
    const json = await runConclave(nats.url, ["events", "--session", SESSION, "--json"]);
    expectNoEscOrBel(json.stdout);
    const started = json.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as EngineEvent)
      .find((e) => e.kind === "TURN_STARTED");
    expect(started?.kind === "TURN_STARTED" && started.payload.user_input).toBe(`hello ${HOSTILE}`);
  });
});

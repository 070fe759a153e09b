/**
 * `conclave chat` in a real terminal: tmux runs it in a 120×40 pane (a private
 * server, `tmux -L`), the test types with `send-keys` and reads the screen with
 * `capture-pane`, against nats-server, a runner and a worker in LLM mode
 * answered by a scripted model. The model streams the reply of a message that
 * asks to answer "slowly" one small piece every 300 ms, so the turn is surely
 * still streaming when the test, having seen its first piece on screen,
 * presses Ctrl-C.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { CANCEL_REASON } from "../../src/chat/controller.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, type ReplyHandler, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until, waitForEvent } from "../helpers/wait.ts";

const run = promisify(execFile);
const FAST_REPLY = "Hello from the terminal test.";
const SLOW_REPLY = `Let me take this one word at a time, ${"very ".repeat(40)}slowly.`;

/** conclaveModel's answers, with the voice's reply replaced: slow when the user asked for "slowly". */
const chatModel = (): ReplyHandler => {
  const base = conclaveModel();
  return async (body, index) => {
    const reply = await base(body, index);
    if (!body.stream || !("content" in reply)) return reply;
    const slow = body.messages.some((message) => message.role === "user" && message.content.includes("slowly"));
    return slow ? { ...reply, content: SLOW_REPLY, chunkDelayMs: 300 } : { ...reply, content: FAST_REPLY };
  };
};

const nats = useNatsServer();
/** A server no runner serves. */
const bare = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" }),
);

/** A tmux server of this file's own, configured to keep a pane whose program exited (to read its last words). */
const socket = `conclave-chat-${process.pid}`;
const configDir = mkdtempSync(join(tmpdir(), "conclave-chat-tmux-"));
const config = join(configDir, "tmux.conf");
writeFileSync(config, "set -g remain-on-exit on\nset -g status off\n");
const tmux = async (...args: string[]) => (await run("tmux", ["-L", socket, "-f", config, ...args])).stdout;
/** Starts `conclave chat --session <session>` in a new tmux session named `name`, against `url`. */
const startChat = (name: string, url: string, session: string) =>
  tmux(
    "new-session",
    ...["-d", "-x", "120", "-y", "40", "-s", name],
    ...["-e", `CONCLAVE_NATS_URL=${url}`, "-e", "CONCLAVE_LOG=quiet"],
    // The shell says how the chat exited (tmux's own #{pane_dead_status} comes late, if at all).
    `'${process.execPath}' '${CONCLAVE_BIN}' chat --session ${session}; echo "chat exited with status $?"`,
  );
let pane = "chat";
const screen = () => tmux("capture-pane", "-p", "-t", pane);
const keys = (...names: string[]) => tmux("send-keys", "-t", pane, ...names);
const type = (text: string) => tmux("send-keys", "-t", pane, "-l", text);

/** Waits until the screen shows `what` (a string or a pattern), and returns that screen. */
async function see(what: string | RegExp, timeoutMs = 20_000): Promise<string> {
  let last = "";
  const shows = (text: string) => (typeof what === "string" ? text.includes(what) : what.test(text));
  try {
    await until(
      async () => {
        last = await screen();
        return shows(last);
      },
      { timeoutMs, everyMs: 100, what: `${what} on screen` },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; the screen:\n${last}`);
  }
  return last;
}

beforeAll(async () => {
  await run("tmux", ["-V"]).catch(() => {
    throw new Error("this test drives the chat in tmux, which is not installed (Debian: apt-get install tmux)");
  });
  model = await startOpenAIServer(chatModel());
  await processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner"]);
});
afterAll(async () => {
  await tmux("kill-server").catch(() => {}); // no server left: nothing to kill
  rmSync(configDir, { recursive: true, force: true });
  await model?.stop();
});

describe("conclave chat in a terminal", () => {
  it("sends a message and shows its turn live, cancels the next with Ctrl-C, and quits on a second Ctrl-C", async () => {
    pane = "chat";
    await startChat(pane, nats.url, "tui");
    await see("session tui · Enter sends · Ctrl-C quits");

    await type("hello there");
    await keys("Enter");
    const first = await see(`conclave › ${FAST_REPLY}`);
    expect(first).toContain("you › hello there");
    expect(first).toMatch(/stage +(✓ \w+ +){7}✓ memory_commit/);
    expect(first).toMatch(/agents +✓ [a-z_]+\.[a-z_]+/);
    expect(first).not.toMatch(/agents .*[▸✗]/);
    expect(first).toMatch(/rounds +round 0: consensus \d\.\d\d/);
    expect(first).toMatch(/council +speak · intent support/);
    expect(first).toMatch(/critics +#1 passed: ✓ \w+/);
    expect(first).toMatch(/outcome +✔ Complete in \d+ ms/);
    expect(first).toContain("session tui · Enter sends · Ctrl-C quits");

    await type("please answer slowly");
    await keys("Enter");
    const streaming = await see(/reply +Let me/);
    expect(streaming).toContain("you › please answer slowly");
    expect(streaming).toMatch(/session tui · turn 2 · council · Ctrl-C cancels/);
    await keys("C-c");
    const cancelled = await see(`turn 2: ✘ cancelled: ${CANCEL_REASON}`);
    expect(cancelled).not.toContain(`conclave › ${SLOW_REPLY}`);
    expect(cancelled).toMatch(/stage +(✓ \w+ +){5}✗ council {2}· critics {2}· memory_commit/);
    expect(cancelled).toMatch(/outcome +✘ cancelled: /);
    // Cancelled in the runtime, not only on screen: the turn's stored end says so.
    const observer = await nats.connect("client");
    const end = await waitForEvent(
      observer,
      subjects.turnEvents("tui", 2, await eventStreamCount(observer)),
      (event) => event.kind === "TURN_COMPLETED",
    );
    expect(end.payload).toMatchObject({ outcome: { status: "Cancelled", reason: CANCEL_REASON } });
    await see("session tui · Enter sends · Ctrl-C quits");

    await keys("C-c");
    await see("chat exited with status 0", 10_000);
  });

  it("reopening a session shows its conversation so far", async () => {
    pane = "again";
    await startChat(pane, nats.url, "tui");
    const restored = await see("session tui · Enter sends · Ctrl-C quits");
    // The cancelled turn said nothing: the user's message, and no reply.
    expect(restored).toContain(`you › hello there\nconclave › ${FAST_REPLY}\nyou › please answer slowly\n`);
    expect(restored).not.toContain(SLOW_REPLY);
    await keys("C-c");
    await see("chat exited with status 0", 10_000);
  });

  it("says so in the conversation when no runner answers, and stays open", async () => {
    pane = "bare";
    await startChat(pane, bare.url, "nobody");
    await see("session nobody · Enter sends · Ctrl-C quits");
    await type("is anyone there?");
    await keys("Enter");
    const refused = await see(/not sent: .*is a runner up\?/);
    expect(refused).toContain("you › is anyone there?");
    await see("session nobody · Enter sends · Ctrl-C quits");
    await keys("C-c");
    await see("chat exited with status 0", 10_000);
  });

  it("refuses to start without a terminal, in one line (exit 2)", async () => {
    const refused = await run(process.execPath, [CONCLAVE_BIN, "chat"], {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url },
    }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).toBe(2);
    expect(refused?.stderr.trim().split("\n")).toEqual([
      "conclave chat: chat needs a terminal (stdin and stdout a TTY); from a script, use conclave send (see conclave chat --help)",
    ]);
  });
});

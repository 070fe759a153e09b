/**
 * Erasing a session reaches `conclave serve`'s A2A task store (issue 41): the
 * gateway follows `conclave.session.erased` and drops every task whose calls
 * worked in the session (a conversation's turns, a recipe's run, one still
 * running when the erase came), so get and list find none of them after it.
 * A real stack, all processes, driven with the A2A SDK's own client.
 */
import { type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory } from "@a2a-js/sdk/client";
import { beforeAll, describe, expect, it } from "vitest";
import { LIST_ALL_TASKS } from "../helpers/a2a.ts";
import { useGatewayStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const stack = useGatewayStack({ recipes: ["approval.yaml"] });
let a2a: Client;

beforeAll(async () => {
  a2a = await new ClientFactory().createFromUrl(stack.baseUrl);
});

/** A user's message with one part: text, or data (a recipe's inputs). */
function message(content: Part["content"], ids: { contextId?: string; metadata?: Record<string, unknown> } = {}) {
  const mediaType = content?.$case === "data" ? "application/json" : "text/plain";
  const part: Part = { content, metadata: undefined, filename: "", mediaType };
  const sent: Message = {
    messageId: crypto.randomUUID(),
    contextId: ids.contextId ?? "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [part],
    metadata: ids.metadata,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: "", message: sent, configuration: undefined, metadata: undefined };
}
const say = (value: string, contextId: string) => message({ $case: "text", value }, { contextId });

async function send(request: ReturnType<typeof message>): Promise<Task> {
  const result = await a2a.sendMessage(request);
  expect("status" in result).toBe(true);
  return result as Task;
}

/** Every task the gateway lists for this caller, by id. */
async function listed(): Promise<string[]> {
  return (await a2a.listTasks(LIST_ALL_TASKS)).tasks.map((task) => task.id);
}

/** Which of the tasks `get` still finds. */
async function found(ids: readonly string[]): Promise<string[]> {
  const kept: string[] = [];
  for (const id of ids) {
    try {
      await a2a.getTask({ tenant: "", id });
      kept.push(id);
    } catch (error) {
      expect(String(error)).toMatch(/not found/i);
    }
  }
  return kept;
}

/** Waits until get finds none of `ids` (the gateway drops them on the broadcast; nobody waits for it). */
function gone(ids: readonly string[]): Promise<string[]> {
  return eventually(
    () => found(ids),
    (kept) => kept.length === 0,
  );
}

describe("erasing a session reaches the gateway's A2A tasks", () => {
  it("drops a conversation's tasks; another conversation's stay", async () => {
    const first = await send(say("my locker code is 4711", "erase-talk"));
    const second = await send(say("and my bike lock is 0815", "erase-talk"));
    const other = await send(say("hello there", "erase-keep"));
    for (const task of [first, second, other]) expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await found([first.id, second.id, other.id])).toEqual([first.id, second.id, other.id]);

    await stack.conclave.erase("erase-talk");

    expect(await gone([first.id, second.id])).toEqual([]);
    const all = await listed();
    expect(all).not.toContain(first.id);
    expect(all).not.toContain(second.id);
    expect(all).toContain(other.id);
    expect((await a2a.getTask({ tenant: "", id: other.id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // The conversation can start again, as a new task in the emptied session.
    const again = await send(say("hello again", "erase-talk"));
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await found([again.id])).toEqual([again.id]);
  });

  it("drops a recipe task waiting for an answer when its run's session is erased", async () => {
    const waiting = await send(
      message({ $case: "data", value: { topic: "a secret draft" } }, { metadata: { skill: "approval" } }),
    );
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const run = waiting.status?.message?.parts.flatMap((part) =>
      part.content?.$case === "data" ? [part.content.value as { session_id: string }] : [],
    )[0];
    expect(run?.session_id).toMatch(/^run-/);

    await stack.conclave.erase(run!.session_id);

    expect(await gone([waiting.id])).toEqual([]);
    expect(await listed()).not.toContain(waiting.id);
  });

  it("drops a task whose turn the erase cancelled while it ran: it is not saved again as it ends", async () => {
    const started = await stack.slowAgentStarted("erase-slow", 1);
    // The stream's first task event and the agent's start race each other: both are waited for.
    let taskSeen!: (task: Task) => void;
    const firstTask = new Promise<Task>((resolve) => {
      taskSeen = resolve;
    });
    const stream = (async () => {
      for await (const event of a2a.sendMessageStream(say("slow, please", "erase-slow")))
        if (event.payload?.$case === "task") taskSeen(event.payload.value as Task);
    })().catch(() => {});
    await started.seen;
    const task = await firstTask;

    const record = await stack.conclave.erase("erase-slow");
    expect(record.cancelled_turns).toEqual([1]);
    await stream;

    expect(await gone([task.id])).toEqual([]);
    expect(await listed()).not.toContain(task.id);
  });
});

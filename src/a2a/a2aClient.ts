/**
 * The client side of A2A delegation, over `@a2a-js/sdk` (an optional
 * package: load this module through loadA2aClient, remoteAgents.ts): the
 * agent's card fetched and checked, then each message sent with the SDK's
 * client, waiting for the task to end. Every request, the card's and the
 * SDK's, goes through the guarded fetch (guardedFetch.ts): only what the
 * operator's allowlist admits, never an internal address it does not name.
 */
import { randomUUID } from "node:crypto";
import { AgentCard, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { allows } from "../config/allowlist.ts";
import { messageOf } from "../errors.ts";
import { guardedFetch } from "./guardedFetch.ts";
import { RemoteAgentError, type RemoteAgentPolicy } from "./policy.ts";
import { A2aAgentError } from "./remoteAgents.ts";

/** Longest the card's fetch may take. */
const CARD_TIMEOUT_MS = 10_000;

/** An A2A agent whose card was fetched and checked. */
export interface OpenA2aAgent {
  card: AgentCard;
  /** Sends one message (a new task) and resolves with the answer: its data part's value, else its text. */
  ask(text: string, signal: AbortSignal): Promise<unknown>;
}

/**
 * Fetches the card at `cardUrl` through the guard and checks it (a name, the
 * skills, an interface's url the allowlist admits). A RemoteAgentError when
 * the policy refuses it or it cannot be fetched; an A2aAgentError naming the
 * url when it is not a card.
 */
export async function fetchAgentCard(
  cardUrl: string,
  signal: AbortSignal,
  policy: RemoteAgentPolicy,
): Promise<AgentCard> {
  const fail = (message: string, cause?: unknown) =>
    new A2aAgentError(cardUrl, message, cause === undefined ? undefined : { cause });
  const response = await guardedFetch({ policy, cardUrl }, "card")(cardUrl, {
    headers: { accept: "application/json", "A2A-Version": "1.0" },
    signal: AbortSignal.any([signal, AbortSignal.timeout(CARD_TIMEOUT_MS)]),
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new RemoteAgentError(cardUrl, "unreachable", `GET ${cardUrl} answered HTTP ${response.status}`);
  }
  let raw: unknown;
  try {
    raw = await response.json();
  } catch (error) {
    throw fail("the agent card is not JSON", error);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw fail("the agent card is not a JSON object");
  const record = raw as Record<string, unknown>;
  if (typeof record.name !== "string" || record.name.trim() === "") throw fail("the agent card has no name");
  if (!Array.isArray(record.skills)) throw fail("the agent card has no skills");
  let card: AgentCard;
  try {
    card = AgentCard.fromJSON(raw);
  } catch (error) {
    throw fail(`the agent card does not parse: ${messageOf(error)}`, error);
  }
  const named = card.supportedInterfaces.filter((entry) => /^https?:\/\//.test(entry.url));
  if (named.length === 0) throw fail("the agent card names no interface url (supportedInterfaces)");
  // A card cannot send the runner elsewhere: only the interfaces the allowlist admits are kept.
  const allowed = named.filter((entry) => allows(policy.allow, entry.url, "call"));
  if (allowed.length === 0)
    throw new RemoteAgentError(
      cardUrl,
      "not_allowed",
      `the card's interfaces are not on the allowlist: ${named.map((entry) => entry.url).join(", ")}`,
    );
  return { ...card, supportedInterfaces: allowed };
}

/** Fetches and checks the agent's card, and opens the SDK's client on it, its requests through the guard. */
export async function openA2aAgent(
  cardUrl: string,
  signal: AbortSignal,
  policy: RemoteAgentPolicy,
): Promise<OpenA2aAgent> {
  const card = await fetchAgentCard(cardUrl, signal, policy);
  const fetchImpl = guardedFetch({ policy, cardUrl });
  let client: Awaited<ReturnType<ClientFactory["createFromAgentCard"]>>;
  try {
    client = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    }).createFromAgentCard(card);
  } catch (error) {
    throw new A2aAgentError(cardUrl, `no transport of the card can be used: ${messageOf(error)}`, { cause: error });
  }
  return {
    card,
    async ask(text, askSignal) {
      const message: Message = {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: Role.ROLE_USER,
        parts: [textPart(text)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      // Blocking (the default): the server answers once the task ends or needs input.
      let result = await client.sendMessage(
        { tenant: "", message, configuration: undefined, metadata: undefined },
        { signal: askSignal },
      );
      if ("status" in result && !isSettled(result) && card.capabilities?.streaming) {
        for await (const event of client.resubscribeTask({ tenant: "", id: result.id }, { signal: askSignal })) {
          if (event.payload?.$case === "task") result = event.payload.value;
          if (event.payload?.$case === "statusUpdate")
            result = { ...result, status: event.payload.value.status } as Task;
          if ("status" in result && isSettled(result)) break;
        }
        result = await client.getTask({ tenant: "", id: (result as Task).id, historyLength: 0 }, { signal: askSignal });
      }
      return answerOf(cardUrl, result);
    },
  };
}

const textPart = (value: string): Part => ({
  content: { $case: "text", value },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});

const TERMINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);
const isSettled = (task: Task): boolean => TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED);

/** A message's or a task's answer: the first data part's value, else the text parts joined. */
function answerOf(cardUrl: string, result: Message | Task): unknown {
  if (!("status" in result)) return partsValue(result.parts);
  const state = result.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
  const said = result.status?.message ? textOf(result.status.message.parts) : "";
  const because = said === "" ? "" : `: ${said}`;
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED: {
      const parts = result.artifacts.flatMap((artifact) => artifact.parts);
      return partsValue(parts.length > 0 ? parts : (result.status?.message?.parts ?? []));
    }
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      throw new A2aAgentError(
        cardUrl,
        `the task needs ${state === TaskState.TASK_STATE_INPUT_REQUIRED ? "more input" : "authentication"}, which delegation cannot give yet${because}`,
      );
    case TaskState.TASK_STATE_FAILED:
      throw new A2aAgentError(cardUrl, `the task failed${because}`);
    case TaskState.TASK_STATE_REJECTED:
      throw new A2aAgentError(cardUrl, `the task was rejected${because}`);
    case TaskState.TASK_STATE_CANCELED:
      throw new A2aAgentError(cardUrl, `the task was cancelled${because}`);
    default:
      throw new A2aAgentError(cardUrl, `the task did not finish (state ${TaskState[state] ?? state})`);
  }
}

const textOf = (parts: readonly Part[]): string =>
  parts
    .flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : []))
    .join("\n\n")
    .trim();

function partsValue(parts: readonly Part[]): unknown {
  for (const part of parts) if (part.content?.$case === "data") return part.content.value;
  return textOf(parts);
}

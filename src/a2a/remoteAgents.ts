/**
 * Remote A2A agents a recipe names (an agent definition with an `a2a+https:`
 * uri or an `a2a: { card_url }` block): what the runner asks when a node's
 * agent delegates to one (`ctx.delegate`). This module does not import
 * `@a2a-js/sdk` (an optional package): the client side (a2aClient.ts) is
 * loaded the first time a run asks a remote agent.
 */
import { type AgentReply, Contribution } from "../contracts/agent.ts";
import { ConclaveError, messageOf, singleLine } from "../errors.ts";
import { importOptional } from "../optionalPackages.ts";
import { createLogger, type Logger } from "../telemetry/log.ts";
import { RemoteAgentError, type RemoteAgentPolicy, remoteAgentPolicy } from "./policy.ts";

/** Where a remote agent's card is: what a recipe's agent definition says. */
export interface RemoteAgentRef {
  /** The agent card's URL (`https://host/.well-known/agent-card.json`). */
  card_url: string;
}

/** A remote A2A agent could not be asked (its card, the call, or its answer): the message names the card's url. */
export class A2aAgentError extends ConclaveError<"agent_failed"> {
  /** The card's url. */
  readonly cardUrl: string;
  constructor(cardUrl: string, message: string, options?: ErrorOptions) {
    super("agent_failed", singleLine(`A2A agent ${cardUrl}: ${message}`, 1_000), options);
    this.cardUrl = cardUrl;
  }
}

/**
 * The card url a definition's `uri` names (`a2a+https://…` → `https://…`),
 * or null when the uri is not an A2A one; `problem` says what is wrong with one that is.
 */
export function cardUrlOf(uri: string): { url: string } | { problem: string } | null {
  if (!uri.startsWith("a2a+")) return null;
  return checkedCardUrl(uri.slice("a2a+".length));
}

/** A card url as an absolute http(s) URL, or the problem with it. */
export function checkedCardUrl(url: string): { url: string } | { problem: string } {
  try {
    const parsed = new URL(url);
    if (parsed.protocol === "https:" || parsed.protocol === "http:") return { url: parsed.href };
    return { problem: `an A2A agent card url must be http(s), not ${parsed.protocol}` };
  } catch {
    return { problem: `'${url}' is not a URL` };
  }
}

/**
 * What this module needs of the client side (a2aClient.ts), typed here so that no declaration of
 * ours names the optional SDK: a project without it still type-checks against our .d.ts files.
 */
export interface A2aClientSide {
  openA2aAgent(
    cardUrl: string,
    signal: AbortSignal,
    policy: RemoteAgentPolicy,
  ): Promise<{ ask(text: string, signal: AbortSignal): Promise<unknown> }>;
}

/** The A2A client side; a MissingDependencyError (one line: what to install) without `@a2a-js/sdk`. */
export function loadA2aClient(): Promise<A2aClientSide> {
  return importOptional("A2A delegation", ["@a2a-js/sdk"], () => import("./a2aClient.ts"));
}

/** A run's remote agents: each one's card is fetched (and checked) once, on the first call to it. */
export interface RemoteAgents {
  /** Whether `agentId` is a remote agent of the run. */
  has(agentId: string): boolean;
  /** Asks the remote agent; resolves with its answer (its data part's value, else its text). */
  ask(agentId: string, message: string, signal: AbortSignal): Promise<unknown>;
  /** Asks the remote agent, its answer as a local agent's reply (its output; `worker` is the card's url). */
  reply(agentId: string, message: string, signal: AbortSignal): Promise<AgentReply>;
}

/** How a run's remote agents are reached. */
export interface RemoteAgentsOptions {
  /** What the operator allows. Default: the environment's (CONCLAVE_A2A_ALLOW), read at each card's fetch. */
  policy?: RemoteAgentPolicy;
  /** Where what a refused or failed remote agent answered is logged. Default: a runner logger on stderr. */
  log?: Logger;
}

let defaultLog: Logger | undefined;

/** The remote agents of one run, by agent id. */
export function remoteAgents(
  refs: Readonly<Record<string, RemoteAgentRef>>,
  options: RemoteAgentsOptions = {},
): RemoteAgents {
  const opened = new Map<string, ReturnType<typeof open>>();
  const open = async (ref: RemoteAgentRef, signal: AbortSignal) =>
    (await loadA2aClient()).openA2aAgent(ref.card_url, signal, options.policy ?? remoteAgentPolicy());
  const log = (): Logger => {
    if (options.log) return options.log;
    defaultLog ??= createLogger("runner");
    return defaultLog;
  };
  return {
    has: (agentId) => Object.hasOwn(refs, agentId),
    async ask(agentId, message, signal) {
      const ref = refs[agentId];
      if (!ref) throw new ConclaveError("unknown_agent", `${agentId} is not a remote agent of this recipe`);
      let agent = opened.get(agentId);
      if (!agent) {
        agent = open(ref, signal);
        opened.set(agentId, agent);
        // A failed fetch is not kept: a later call (a retry) fetches again.
        agent.catch(() => opened.delete(agentId));
      }
      try {
        return await (await agent).ask(message, signal);
      } catch (error) {
        // An abort (the turn's cancel or timeout) is not the remote agent's failure: it stays what it was.
        if (signal.aborted) throw error;
        throw reported(log(), agentId, ref.card_url, error);
      }
    },
    async reply(agentId, message, signal) {
      const started = performance.now();
      const output = await this.ask(agentId, message, signal);
      return {
        agent_id: agentId,
        output,
        contribution: Contribution.parse({}),
        elapsed_ms: Math.max(0, performance.now() - started),
        worker: refs[agentId]?.card_url ?? "a2a",
      };
    },
  };
}

/**
 * The error a remote agent's failure is told as: a RemoteAgentError (found
 * anywhere in the causes: the SDK may wrap what the guarded fetch threw) or
 * another ConclaveError as it is; anything else (the SDK's own errors quote
 * statuses and bodies) is `remote agent call failed`. What happened goes to `log`.
 */
function reported(log: Logger, agentId: string, cardUrl: string, error: unknown): Error {
  const guard = remoteAgentErrorIn(error);
  const told =
    guard ?? (error instanceof ConclaveError ? error : new RemoteAgentError(cardUrl, "failed", messageOf(error)));
  if (told instanceof RemoteAgentError)
    log.warn(`remote agent ${agentId} (${cardUrl}): ${told.message}: ${told.detail}`, {
      agent_id: agentId,
      card_url: cardUrl,
      failure: told.failure,
    });
  return told;
}

function remoteAgentErrorIn(error: unknown): RemoteAgentError | null {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++)
    if (at instanceof RemoteAgentError) return at;
  return null;
}

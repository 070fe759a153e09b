import type { AgentRoster } from "../../agents/announcement.ts";
import type { AgentDirectory } from "../../agents/directory.ts";
import { INBOX_PREFIXES } from "../../bus/connection.ts";
import { asHandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply, isReplyUnder } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { respondJson } from "../../bus/wire.ts";
import { singleLine } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";

/** What answering a roster request needs. */
export interface RosterDeps {
  /** The runner's agent directory: what its turns are planned and checked with. */
  directory: Promise<Pick<AgentDirectory, "roster" | "tools">>;
  /** The runner's id (`<host>:<pid>`), named in the answer. */
  runner: string;
  log: Logger;
}

const OBSERVER_INBOX = `${INBOX_PREFIXES.observer}.`;

/**
 * Where a roster may be sent: the observer's inbox (`conclave agents`
 * connects as the observer, and nats.conf lets the runner answer it there),
 * or an inbox the runner answers its other requests on. Anything else (a
 * data subject named as the reply) is not answered.
 */
const answerable = (reply: string | undefined): reply is string =>
  isInboxReply(reply, "runner") || isReplyUnder(reply, [OBSERVER_INBOX]);

/**
 * A roster request (`conclave.agents.roster`, any runner answers; its body is
 * not read): the agents and tools this runner's directory holds, the ones its
 * turns are planned with. Unlike a roll call, it includes an agent whose
 * worker announced it and went silent, until the directory forgets it (three
 * heartbeats later), so what `conclave agents` lists is what turns run with.
 */
export async function serveRoster(deps: RosterDeps, msg: ServiceMsg): Promise<void> {
  if (!answerable(msg.reply)) return;
  try {
    const directory = await deps.directory;
    const roster: AgentRoster = { runner: deps.runner, agents: directory.roster(), tools: directory.tools() };
    respondJson(msg, roster);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`roster on ${msg.subject}: ${singleLine(failure.message)}`);
    respondWithError(msg, failure);
  }
}

/**
 * A client's skills refresh (`conclave.skills.refresh`, any runner serves
 * it): the runner asks every worker with skills (`conclave.skills.reload`,
 * which only runners may publish), gathers their answers until they stop
 * coming, and answers with one report per worker.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { asHandlerError, respondWithError } from "../../bus/errors.ts";
import { gatherReplies } from "../../bus/gatherReplies.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { respondJson } from "../../bus/wire.ts";
import { type SkillsRefreshReply, WorkerSkillsRefresh } from "../../contracts/skill.ts";
import { singleLine } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";

/** How long the runner waits for the workers' answers, at most. */
export const SKILLS_REFRESH_WAIT_MS = 15_000;
/** After an answer, how long a quiet spell means every worker has answered. */
export const SKILLS_REFRESH_QUIET_MS = 1_500;

/** Asks every worker with skills to refresh them; their reports, sorted by worker. */
export async function refreshWorkerSkills(
  nc: NatsConnection,
  options: { waitMs?: number; quietMs?: number } = {},
): Promise<SkillsRefreshReply> {
  // No responders: no worker has skills.
  const workers = await gatherReplies(nc, subjects.skillsReload, {}, WorkerSkillsRefresh, "skills refresh report", {
    waitMs: options.waitMs ?? SKILLS_REFRESH_WAIT_MS,
    quietMs: options.quietMs ?? SKILLS_REFRESH_QUIET_MS,
  });
  return { workers: workers.sort((a, b) => a.worker.localeCompare(b.worker)) };
}

/** Serves `conclave.skills.refresh`: the workers' reports, or an error reply. */
export async function serveSkillsRefresh(deps: { nc: NatsConnection; log: Logger }, msg: ServiceMsg): Promise<void> {
  try {
    const reply = await refreshWorkerSkills(deps.nc);
    deps.log.info(`skills refresh: ${reply.workers.length} worker(s) answered`);
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`skills refresh: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}

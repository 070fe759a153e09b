/**
 * A worker's side of a skills refresh (docs/skills.md, "Refreshing skills"):
 * a runner asks every worker with skills on `conclave.skills.reload`; each
 * re-reads its directory and answers with what changed, or the one-line
 * error that left its skills as they were.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { isInboxReply } from "../bus/replies.ts";
import { subjects } from "../bus/subjects.ts";
import { respondJson } from "../bus/wire.ts";
import type { WorkerSkillsRefresh } from "../contracts/skill.ts";
import type { WorkerSkills } from "../skills/agentSkills.ts";
import type { Logger } from "../telemetry/log.ts";

/** Follows skills refreshes for `skills` (a plain subscription: every worker hears each one); returns the unsubscribe. */
export function followSkillsRefresh(nc: NatsConnection, skills: WorkerSkills, worker: string, log: Logger): () => void {
  const subscription = nc.subscribe(subjects.skillsReload, {
    callback: (error, msg) => {
      if (error) return;
      void skills.refresh().then((result) => {
        const report: WorkerSkillsRefresh =
          "error" in result
            ? { worker, dir: skills.dir, added: [], removed: [], changed: [], error: result.error }
            : { worker, dir: skills.dir, ...result };
        if ("error" in result) log.warn(`skills refresh: ${result.error}; the skills stay as they were`);
        else
          log.info(
            `skills refresh: ${report.added.length} added, ${report.removed.length} removed, ${report.changed.length} changed`,
          );
        // Only a worker's answer to a runner: a reply subject naming anything else is never written.
        if (isInboxReply(msg.reply, "worker")) respondJson(msg, report);
      });
    },
  });
  return () => subscription.unsubscribe();
}

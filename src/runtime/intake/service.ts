import type { NatsConnection } from "@nats-io/nats-core";
import { type Service, type ServiceMsg, startService } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { packageVersion } from "../../version.ts";
import type { SuspensionTimers } from "../recipeHost/suspensionTimers.ts";
import { serveCancel } from "./cancel.ts";
import { type EraseDeps, serveErase } from "./erase.ts";
import { serveFork } from "./fork.ts";
import { acceptSubmission, type IngressDeps } from "./ingress.ts";
import { relayKnowledge } from "./knowledgeRelay.ts";
import { type LedgerDeps, serveAgentLedger, serveLedger } from "./ledgerRequests.ts";
import { serveMemoryInsights } from "./memoryInsights.ts";
import { serveMemorySearch } from "./memorySearch.ts";
import { serveResume } from "./resume.ts";
import { serveRollback } from "./rollback.ts";
import { type RosterDeps, serveRoster } from "./roster.ts";
import { serveSkillsRefresh } from "./skillsRefresh.ts";
import { serveWatch, type WatchDeps } from "./watch.ts";

/**
 * The runners' NATS service (`conclave-runner`, shared by every runner as a
 * queue group): submissions, cancellations, watches, memory search and the ledgers, from clients of the runtime's
 * account and, through their accounts' imports, from tenants.
 */
export async function serveIntake(
  nc: NatsConnection,
  deps: IngressDeps &
    WatchDeps &
    LedgerDeps & {
      timers: SuspensionTimers;
      roster?: RosterDeps;
      /** The erase endpoint's settings: this runner's name, its blackboard URLs. */
      erase?: Pick<EraseDeps, "runner" | "blackboard" | "env">;
    },
): Promise<Service> {
  const service = startService(nc, "runner", {
    name: "conclave-runner",
    version: packageVersion(),
    description: "Conclave turn runner",
  });
  // Handlers must not be async: the work runs detached and always answers.
  const endpoint = (name: string, subject: string, handle: (msg: ServiceMsg) => Promise<void>) =>
    service.addEndpoint(name, {
      subject,
      handler: (msg) => {
        void handle(msg);
      },
    });
  endpoint("submit", subjects.turnSubmitAll, (msg) => acceptSubmission(deps, msg));
  endpoint("tenant_submit", subjects.tenantSubmitAll, (msg) => acceptSubmission(deps, msg));
  endpoint("watch", subjects.turnWatch("*"), (msg) => serveWatch(deps, msg));
  endpoint("cancel", subjects.turnCancelAll, (msg) => serveCancel(deps, msg));
  endpoint("resume", subjects.turnResumeAll, (msg) => serveResume(deps, msg));
  endpoint("rollback", subjects.turnRollbackAll, (msg) => serveRollback(deps, msg));
  endpoint("memory_search", subjects.memorySearchAll, (msg) => serveMemorySearch(deps, msg));
  endpoint("memory_insight", subjects.memoryInsightAll, (msg) => serveMemoryInsights(deps, msg));
  endpoint("ledger", subjects.ledgerAll, (msg) => serveLedger(deps, msg));
  // Workers only (nats.conf): an agent's ctx.ledgers, recorded as the agent's.
  endpoint("agent_ledger", subjects.agentLedgerAll, (msg) => serveAgentLedger(deps, msg));
  endpoint("tenant_watch", subjects.tenantWatchAll, (msg) => serveWatch(deps, msg));
  endpoint("tenant_memory_search", subjects.tenantMemorySearchAll, (msg) => serveMemorySearch(deps, msg));
  endpoint("tenant_ledger", subjects.tenantLedgerAll, (msg) => serveLedger(deps, msg));
  // Knowledge collections (docs/knowledge.md): relayed to the knowledge workers with the tenant who asked.
  endpoint("knowledge", subjects.knowledgeAll, (msg) => relayKnowledge(deps, msg));
  endpoint("tenant_knowledge", subjects.tenantKnowledgeAll, (msg) => relayKnowledge(deps, msg));
  // Skills refresh (docs/skills.md): every worker with skills re-reads its directory.
  endpoint("skills_refresh", subjects.skillsRefresh, (msg) => serveSkillsRefresh(deps, msg));
  // A session's erase (docs/operations.md, "Data lifecycle"): any runner, with its purge rights.
  const erase: EraseDeps = { ...deps, runner: "runner", ...deps.erase };
  endpoint("erase", subjects.sessionEraseAll, (msg) => serveErase(erase, msg));
  endpoint("tenant_erase", subjects.tenantSessionEraseAll, (msg) => serveErase(erase, msg));
  // A session's fork (docs/tape.md): the mirror image of an erase, with the same reach into every store.
  endpoint("fork", subjects.sessionForkAll, (msg) =>
    serveFork({ ...erase, sessions: deps.sessions, ledgers: deps.ledgers }, msg),
  );
  // The observer's `conclave agents`: the roster this runner's turns are planned with.
  const roster = deps.roster;
  if (roster) endpoint("roster", subjects.agentsRoster, (msg) => serveRoster(roster, msg));
  return service;
}

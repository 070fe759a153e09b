import type { NatsConnection } from "@nats-io/nats-core";
import { createActor } from "xstate";
import { sessionMachine } from "../../../machines/session.ts";
import { defaultTurnPolicy } from "../../../machines/turn/index.ts";
import type { AgentDirectory } from "../../agents/directory.ts";
import type { EventLogWriter } from "../../eventlog/writer.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { storedRecordScreen, withInterceptors } from "../interception/intercepted.ts";
import { defaultInterceptors } from "../interception/interceptors.ts";
import { withLedgerDigest } from "../ledgerContext.ts";
import type { Logger } from "../log.ts";
import { provideTurn } from "../provideTurn.ts";
import type { RecipeHost } from "../recipeHost/recipeHost.ts";
import { remoteTurnServices } from "../remoteTurnServices.ts";
import type { SessionSnapshot } from "../sessionStore.ts";
import type { RunnerOptions } from "./options.ts";
import type { SessionActor } from "./sessionHost.ts";
import type { TurnEnds } from "./turnEnds.ts";

/** What a runner's session actors are made with. */
export interface SessionActorDeps {
  /** Where agents are asked, unless `options.services` runs them in-process. */
  nc: NatsConnection;
  directory: Promise<AgentDirectory>;
  /** The sessions' ledgers: agents get their digest. */
  ledgers: LedgerStore;
  log: Logger;
  /** Where the turns' events are recorded. */
  writer: EventLogWriter;
  /** Runs recipe turns. */
  recipes: RecipeHost;
  /** Where the sessions report their turns' ends. */
  ends: Pick<TurnEnds, "suspended" | "finished" | "crashed">;
}

/**
 * The factory of a runner's session actors: the session machine, its
 * pipeline and recipe turns asking agents through the same services (the
 * ledgers' digest, then the interceptors), recording their events in the
 * event log, and reporting their ends to `ends`.
 */
export function sessionActors(
  deps: SessionActorDeps,
  options: RunnerOptions,
): (sessionId: string, snapshot: SessionSnapshot | null) => SessionActor {
  const { writer, ends } = deps;
  const chains = options.interceptors ?? defaultInterceptors();
  const services = withInterceptors(
    withLedgerDigest(
      options.services ?? remoteTurnServices(deps.nc, { directory: deps.directory }),
      deps.ledgers,
      deps.log,
    ),
    chains,
  );
  const stored = storedRecordScreen(chains);
  const record = (context: { session_id: string; turn_id: number }, event: Parameters<typeof stored>[1]) =>
    writer.append(context.session_id, context.turn_id, stored(context, event));
  const turn = provideTurn(services, record);
  const recipeTurn = deps.recipes.logic(services, record, (turn) => writer.flushed(turn.session_id, turn.turn_id));
  const session = sessionMachine.provide({
    actors: { turn, recipeTurn },
    actions: {
      turnSuspended: ({ context }, output) =>
        void ends.suspended(context.session_id, output, {
          turns_completed: context.turns_completed,
          last_turn_id: context.last_turn_id,
          modulators: context.modulators,
          stance: context.stance,
        }),
      // Runs after the session's assign: its context already counts this turn, so the snapshot is taken now,
      // in turn order, not after the awaits that follow.
      turnFinished: ({ context }, output) =>
        void ends.finished(context.session_id, output, {
          turns_completed: context.turns_completed,
          last_turn_id: context.last_turn_id,
          modulators: output.modulators,
          stance: output.stance,
        }),
      turnCrashed: ({ context }, failure) => void ends.crashed(context.session_id, failure.turn_id, failure.error),
    },
  });
  const policy = options.policy ?? defaultTurnPolicy;
  return (sessionId: string, snapshot: SessionSnapshot | null) =>
    createActor(session, {
      input: { session_id: sessionId, policy, ...(snapshot ?? {}) },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
}

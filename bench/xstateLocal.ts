import { createActor, toPromise } from "xstate";
import { defaultTurnPolicy } from "../machines/turn/index.ts";
import type { TurnRecord } from "../src/contracts/turnProtocol.ts";
import type { Modulators, Stance } from "../src/contracts/workspace.ts";
import { provideTurn } from "../src/runtime/turnServices/provideTurn.ts";
import type { TurnServices } from "../src/runtime/turnServices/turnServices.ts";
import type { InProcessPipeline } from "./inprocess.ts";

/**
 * Conclave's own turn statechart run in one process (`provideTurn` with
 * in-process services, events kept in memory): no NATS, no JetStream. Not a
 * target; it separates what the statechart costs from what distribution costs.
 */
export function xstateLocalPipeline(
  services: TurnServices,
  start: { modulators: Modulators; stance: Stance },
): InProcessPipeline {
  const log = new Map<string, TurnRecord[]>();
  const turn = provideTurn(services, (context, event) => {
    const key = `${context.session_id}.${context.turn_id}`;
    const events = log.get(key);
    if (events) events.push(event);
    else log.set(key, [event]);
  });
  const sessions = new Map<string, { turn_id: number; modulators: Modulators; stance: Stance }>();
  return {
    name: "Conclave turn machine in-process (xstate, no NATS)",
    runTurn: async (sessionId, text) => {
      const carry = sessions.get(sessionId) ?? { turn_id: 0, ...start };
      const turnId = carry.turn_id + 1;
      const actor = createActor(turn, {
        input: {
          session_id: sessionId,
          turn_id: turnId,
          text,
          policy: defaultTurnPolicy,
          modulators: carry.modulators,
          stance: carry.stance,
        },
      });
      actor.start();
      const output = await toPromise(actor);
      const key = `${sessionId}.${turnId}`;
      const events = log.get(key)?.length ?? 0;
      log.delete(key);
      sessions.set(sessionId, { turn_id: turnId, modulators: output.modulators, stance: output.stance });
      return { response: output.response, ok: output.outcome.status === "Complete", events };
    },
  };
}

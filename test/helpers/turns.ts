import { createActor, toPromise } from "xstate";
import { defaultTurnPolicy } from "../../machines/turn/index.ts";
import type { ConclaveClient } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnOutput, TurnPolicy, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { localTurnServices } from "../../src/runtime/turnServices/localTurnServices.ts";
import { provideTurn } from "../../src/runtime/turnServices/provideTurn.ts";
import type { TurnServices } from "../../src/runtime/turnServices/turnServices.ts";

/** Runs one turn of the real turn machine in-process and returns what it recorded. */
export async function runLocalTurn(
  text: string,
  overrides: Partial<TurnServices> = {},
  policy: Partial<TurnPolicy> = {},
): Promise<{ records: TurnRecord[]; output: TurnOutput }> {
  const records: TurnRecord[] = [];
  const machine = provideTurn({ ...localTurnServices(), ...overrides }, (_context, record) => records.push(record));
  const actor = createActor(machine, {
    input: {
      session_id: "test",
      turn_id: 1,
      text,
      policy: { ...defaultTurnPolicy, ...policy },
      modulators: neutralModulators(),
      stance: neutralStance(),
    },
  });
  actor.start();
  const output = await toPromise(actor);
  return { records, output };
}

/** `KIND` or `TURN_STAGE_CHANGED:stage`, for compact order assertions. */
export const label = (event: TurnRecord | EngineEvent): string =>
  event.kind === "TURN_STAGE_CHANGED" ? `stage:${event.payload.stage}` : event.kind;

export const stagesOf = (events: (TurnRecord | EngineEvent)[]): string[] =>
  events
    .filter((event) => event.kind === "TURN_STAGE_CHANGED")
    .map((event) => (event.payload as { stage: string }).stage);

/** A promise that never settles but stops when aborted: a worker that never answers. */
export const never = <T>(signal?: AbortSignal): Promise<T> =>
  new Promise<T>((_, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted"))));

/** A turn's stored events, in log order, read through the client (what a test checks a turn's log with). */
export async function turnLog(client: ConclaveClient, sessionId: string, turnId: number): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const { event } of client.events(sessionId, { turnId })) events.push(event);
  return events;
}

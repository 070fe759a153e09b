import type { AnyStateMachine } from "xstate";
import { agentMachine } from "./agent.ts";
import { councilMachine } from "./council.ts";
import { criticMachine } from "./critic.ts";
import { schedulerMachine } from "./scheduler.ts";
import { sessionMachine } from "./session.ts";
import { turnMachine } from "./turn/index.ts";

/** Every statechart of the runtime, by the name the CLI and the viewer use. */
export const MACHINES: Readonly<Record<string, AnyStateMachine>> = {
  turn: turnMachine,
  session: sessionMachine,
  agent: agentMachine,
  scheduler: schedulerMachine,
  council: councilMachine,
  critic: criticMachine,
};

/**
 * The turn statechart and what its hosts need besides the protocol types
 * (those are in src/contracts/turnProtocol.ts).
 */
export { MissingActorError } from "../errors.ts";
export {
  defaultTurnPolicy,
  REFUSAL_REPLY,
  SAFETY_FALLBACK_REPLY,
  type TurnContext,
  type TurnInput,
  zeroSensors,
} from "./context.ts";
export { turnMachine } from "./machine.ts";

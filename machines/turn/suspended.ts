import { turnSetup } from "./setup.ts";

/**
 * The turn waits for a person's approval of an agent's tool call: no process holds it until it is
 * answered; it then runs again from its log (its recorded steps are not made again).
 */
export const suspended = turnSetup.createStateConfig({
  type: "final",
  entry: {
    type: "record",
    params: ({ context }) => ({ kind: "TURN_SUSPENDED", payload: { node: context.suspended?.node ?? "agents" } }),
  },
});

import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/** Files away a piece that was not approved. */
export const archiver = defineAgent({
  name: "ops.archiver",
  description: "Archives a piece that was not approved.",
  agency: "ops",
  output: z.object({ status: z.literal("archived") }),
  run: () => ({ status: "archived" as const }),
});

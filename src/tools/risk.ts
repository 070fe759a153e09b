import type { ToolRisk } from "../contracts/tool.ts";

const ORDER: Record<ToolRisk, number> = { safe: 0, standard: 1, critical: 2 };

/** The higher of a tool's own risk and the risk a recipe declares for it (a recipe can raise it, never lower it). */
export const stricterRisk = (own: ToolRisk, declared: ToolRisk | undefined): ToolRisk =>
  declared !== undefined && ORDER[declared] > ORDER[own] ? declared : own;

import { cardUrlOf, checkedCardUrl } from "../a2a/remoteAgents.ts";
import type { WorkflowRecipeDocument } from "./schema.ts";

/**
 * The remote A2A agents a workflow's definitions name (an agent definition
 * with an `a2a+http(s):` uri or an `a2a: { card_url }` block), by agent id;
 * a bad card url is an issue at its path.
 */
export function remoteAgentsOf(
  definitions: WorkflowRecipeDocument["definitions"],
  issue: (path: string, message: string) => void,
): { remote_agents?: Record<string, { card_url: string }> } {
  const remote: Record<string, { card_url: string }> = {};
  for (const [name, definition] of Object.entries(definitions)) {
    if (definition.type !== "agent") continue;
    const fromUri = definition.uri === undefined ? null : cardUrlOf(definition.uri);
    const fromBlock = definition.a2a ? checkedCardUrl(definition.a2a.card_url) : null;
    const found = fromBlock ?? fromUri;
    if (!found) continue;
    const path = fromBlock ? `definitions.${name}.a2a.card_url` : `definitions.${name}.uri`;
    if ("problem" in found) issue(path, found.problem);
    else if (definition.delegates?.length || definition.tools?.length)
      issue(`definitions.${name}`, "a remote A2A agent cannot be given tools or delegates");
    else remote[definition.id] = { card_url: found.url };
  }
  return Object.keys(remote).length > 0 ? { remote_agents: remote } : {};
}

import { readDataFile } from "../config/dataFile.ts";
import { setting } from "../config/load.ts";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError } from "../errors.ts";
import { ToolPolicy, type ToolPolicyInput } from "./policy.ts";

/**
 * The runner's tool policy from the environment: `CONCLAVE_TOOL_POLICY` names
 * a JSON or YAML file holding a ToolPolicy (`conclave runner` reads it).
 * Absent: none (the defaults apply). A file that cannot be read or does not
 * fit is a `config` error naming the field, before the runner serves.
 */
export function toolPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): ToolPolicyInput | undefined {
  const file = setting(env, "CONCLAVE_TOOL_POLICY");
  if (!file) return undefined;
  const raw = readDataFile(
    file,
    (reason) => new ConclaveError("config", `CONCLAVE_TOOL_POLICY: cannot read ${file}: ${reason}`),
  );
  const checked = ToolPolicy.safeParse(raw ?? {});
  if (!checked.success)
    throw new ConclaveError("config", `CONCLAVE_TOOL_POLICY ${file}: ${describeIssues(checked.error, { join: "; " })}`);
  return checked.data;
}

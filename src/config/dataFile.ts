import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { messageOf } from "../errors.ts";

/**
 * A JSON or YAML file the operator names (a tool policy, a price table, a principals file, a
 * working-memory schema), parsed (YAML reads JSON too). A file that cannot be read or parsed
 * throws what `fail` makes of the reason's first line: each caller's own one-line error.
 */
export function readDataFile(file: string, fail: (reason: string) => Error): unknown {
  try {
    return parseYaml(readFileSync(file, "utf8"));
  } catch (error) {
    throw fail(messageOf(error).split("\n")[0] ?? "");
  }
}

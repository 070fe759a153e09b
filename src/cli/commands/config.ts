import { type ConfigOrigin, type ConfigRow, describeConfig } from "../../config/load.ts";
import { ConfigError } from "../../config/variable.ts";
import { llmConfigProblem, llmConfigWarnings } from "../../llm/configWarnings.ts";
import { defineCommand } from "../command.ts";

const help = `conclave config: the effective configuration of this environment

Usage: conclave config [--json] [--docs]

Prints every variable Conclave reads (CONCLAVE_*, OTEL_*, and the standard
OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, NATS_URL, NATS_CREDS it falls back to), its
value and where it came from: the variable itself, a fallback, or the default.
A CONCLAVE_* name wins over the standard one. Secrets are masked (API keys,
passwords, headers, the password of a URL); files are named, never read.
CONCLAVE_NATS_<ROLE>_* variables are listed when set.

  --json   one JSON object: {"variables":[{name, value, origin, default, ...}]}
  --docs   each variable's documentation under it

A value that is refused is listed with its problem, and the command then
fails with that problem (exit status 2); so does an LLM configuration the
processes would refuse as a whole (a server off this machine without a key, a
keyless server without a model, an embedding model without a server).

Half-set LLM and embedding settings are warned about on stderr, one line each
("conclave config: warning: ..."), without changing the exit status: a model or
base URL without a key, OPENAI_MODEL=offline beside a key, a CONCLAVE_* name
shadowing a different OPENAI_* one, a setting that is not used.`;

/** Where a value came from, for people. */
function originText(origin: ConfigOrigin): string {
  switch (origin.kind) {
    case "env":
      return `from ${origin.variable}`;
    case "fallback":
      return `from ${origin.variable} (standard name)`;
    case "default":
      return "default";
    case "unset":
      return "unset";
  }
}

/** The rows as aligned text, grouped. */
function asText(rows: ConfigRow[], docs: boolean): string {
  const width = Math.max(...rows.map((row) => row.name.length));
  const valueWidth = Math.min(40, Math.max(...rows.map((row) => (row.value ?? "-").length)));
  const lines: string[] = [];
  let group: string | undefined;
  for (const row of rows) {
    if (row.group !== group) {
      group = row.group;
      lines.push(`${lines.length > 0 ? "\n" : ""}[${group}]`);
    }
    const value = row.value ?? "-";
    const origin = row.problem ? `INVALID (${originText(row.origin)})` : originText(row.origin);
    const unsetDefault = row.origin.kind === "unset" && row.default ? ` (${row.default})` : "";
    lines.push(`  ${row.name.padEnd(width)}  ${value.padEnd(valueWidth)}  ${origin}${unsetDefault}`);
    if (row.problem) lines.push(`    ${row.problem}`);
    if (docs) {
      const fallbacks = row.fallbacks ? ` Falls back to ${row.fallbacks.join(", ")}.` : "";
      const elsewhere = row.readElsewhere ? ` Read by ${row.readElsewhere}.` : "";
      lines.push(`    ${row.doc}${fallbacks}${elsewhere}`);
    }
  }
  return lines.join("\n");
}

export default defineCommand({
  help,
  flags: { json: { type: "boolean" }, docs: { type: "boolean" } },
  async run({ values }) {
    const rows = describeConfig(process.env);
    console.log(values.json ? JSON.stringify({ variables: rows }) : asText(rows, values.docs === true));
    for (const warning of llmConfigWarnings(process.env)) console.error(`conclave config: warning: ${warning}`);
    const refused = rows.find((row) => row.problem)?.problem ?? llmConfigProblem(process.env);
    if (refused) throw new ConfigError(refused);
    return 0;
  },
});

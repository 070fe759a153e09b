/**
 * Remote A2A agents (docs/production.md#remote-agents-and-the-allowlist): the
 * operator's allowlist of the agents a recipe may name, and whether tenants
 * may name them. Spread into CONFIG_SCHEMA by schema.ts.
 */
import { z } from "zod";
import { type AllowEntry, parseAllowEntry } from "../allowlist.ts";
import { type ConfigVariable, commaList, flag, variable } from "../variable.ts";

/** Comma-separated hosts, origins or card URLs, each parsed (src/config/allowlist.ts). */
const allowlist = commaList.pipe(
  z.array(z.string()).transform((texts, context) => {
    const entries: AllowEntry[] = [];
    for (const text of texts) {
      const parsed = parseAllowEntry(text);
      if (typeof parsed === "string") context.addIssue({ code: "custom", message: parsed });
      else entries.push(parsed);
    }
    return entries;
  }),
);

/** The remote agents' variables, in the order `conclave config` lists them. */
export const A2A_VARIABLES = {
  CONCLAVE_A2A_ALLOW: variable({
    group: "runner",
    schema: allowlist,
    defaultText: "none: every remote A2A agent is refused",
    doc: "The remote A2A agents recipes may name: comma-separated hosts (agents.example.com), origins (https://host:port) or card URLs. Loopback, private and link-local addresses are refused unless an entry names them (127.0.0.1, localhost).",
  }),
  CONCLAVE_A2A_TENANTS: variable({
    group: "runner",
    schema: flag,
    default: false,
    doc: "1: a tenant's recipe may name remote A2A agents (those CONCLAVE_A2A_ALLOW admits); off, its submission is refused.",
  }),
} as const satisfies Record<string, ConfigVariable>;

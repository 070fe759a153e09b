import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { wireJsonSchemas } from "../../contracts/jsonSchemas.ts";
import { parse } from "../args.ts";
import { EXIT_HELP } from "../failures.ts";

export const help = `conclave schemas: write the JSON Schema of every wire message

Usage: conclave schemas [--out DIR]    (default: schemas/)

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, { out: { type: "string" }, help: { type: "boolean", short: "h" } });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const out = values.out ?? "schemas";
  mkdirSync(out, { recursive: true });
  const schemas = wireJsonSchemas();
  for (const [file, schema] of Object.entries(schemas))
    writeFileSync(join(out, file), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote ${Object.keys(schemas).length} schemas to ${out}/`);
  return 0;
}

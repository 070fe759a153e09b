import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { wireJsonSchemas } from "../../contracts/jsonSchemas.ts";
import { defineCommand } from "../command.ts";

export default defineCommand({
  help: `conclave schemas: write the JSON Schema of every wire message

Usage: conclave schemas [--out DIR]    (default: schemas/)`,
  flags: { out: { type: "string" } },
  async run({ values }) {
    const out = values.out ?? "schemas";
    mkdirSync(out, { recursive: true });
    const schemas = wireJsonSchemas();
    for (const [file, schema] of Object.entries(schemas))
      writeFileSync(join(out, file), `${JSON.stringify(schema, null, 2)}\n`);
    console.log(`wrote ${Object.keys(schemas).length} schemas to ${out}/`);
    return 0;
  },
});

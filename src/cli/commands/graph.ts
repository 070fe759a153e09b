import { MACHINES } from "../../../machines/index.ts";
import { GRAPH_FORMATS, isGraphFormat, renderMachine } from "../../graph/formats.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";

const help = `conclave graph: draw a statechart as Mermaid, Graphviz DOT or JSON

Usage: conclave graph <machine> [--format ${GRAPH_FORMATS.join("|")}]

  <machine>        one of: ${Object.keys(MACHINES).join(", ")}
  --format FORMAT  mermaid (stateDiagram-v2, the default), dot or json

Prints to stdout, e.g.  conclave graph turn --format dot | dot -Tsvg > turn.svg`;

export default defineCommand({
  help,
  flags: { format: { type: "string", short: "f" } },
  positionals: true,
  async run({ values, positionals }) {
    const names = Object.keys(MACHINES);
    if (positionals.length !== 1) throw new UsageError(`give one machine: ${names.join(", ")}`);
    const name = positionals[0]!;
    const machine = Object.hasOwn(MACHINES, name) ? MACHINES[name] : undefined;
    if (!machine) throw new UsageError(`unknown machine '${name}'; the machines are: ${names.join(", ")}`);
    const format = values.format ?? "mermaid";
    if (!isGraphFormat(format)) throw new UsageError(`unknown format '${format}'; choose ${GRAPH_FORMATS.join(", ")}`);
    process.stdout.write(renderMachine(machine, format));
    return 0;
  },
});

import { readFileSync, writeFileSync } from "node:fs";
import { compileRecipe } from "../../../machines/recipe/index.ts";
import { messageOf, singleLine } from "../../errors.ts";
import { GRAPH_FORMATS, isGraphFormat, renderMachine } from "../../graph/formats.ts";
import { fromRecipeJsonSchema } from "../../recipes/jsonSchema.ts";
import {
  type LoadOptions,
  loadRecipe,
  parseRecipeText,
  type RecipeIssue,
  RecipeValidationError,
} from "../../recipes/load.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import { recipeJsonSchemas } from "../../recipes/schema.ts";
import { UsageError } from "../args.ts";
import { defineCommand, defineCommandGroup } from "../command.ts";
import { EXIT } from "../failures.ts";

const SHAPES = ["graph", "workflow"] as const;

const help = `conclave recipe: check, draw or describe Coreason recipe files (apiVersion coreason.ai/v2)

Usage: conclave recipe validate FILE... [--draft] [--logic-handler NAME]... [--json]
       conclave recipe draw FILE [--format ${GRAPH_FORMATS.join("|")}] [--out PATH] [--logic-handler NAME]...
       conclave recipe schema [--shape ${SHAPES.join("|")}]

validate  loads each file (YAML or JSON, either shape) as a runner would before
          running it, and prints  ok FILE: recipe 'NAME' (SHAPE, N nodes)  on stdout;
          a file that cannot run prints one line per problem on stderr:
          FILE: PATH: MESSAGE  (e.g. recipe.yaml: topology.nodes[2].agent_ref: …)
  --draft               check the document only, not that it can run: a draft
                        topology's edges and entry point are not checked, and abstract
                        agent references are allowed (unless status: published)
  --logic-handler NAME  a logic step NAME is runnable (the runner has a handler of
                        that name, recipes.logicHandlers); repeatable
  --json                one JSON line per file on stdout:
                        {"file","ok":true,"recipe","shape","nodes"} or {"file","ok":false,"issues":[{"path","message"}]}
  Whether the agents it calls are hosted by a live worker is checked when it is
  submitted, not here.

draw      compiles the recipe into its statechart (one state per node) and draws it
  --format FORMAT       mermaid (stateDiagram-v2, the default), dot or json
  --out PATH            write there instead of stdout
  --logic-handler NAME  as for validate
  e.g.  conclave recipe draw recipes/triage.yaml --format dot | dot -Tsvg > triage.svg

schema    prints the JSON Schema of recipe documents: both shapes (anyOf), or one
  --shape SHAPE         graph (topology: nodes and edges) or workflow (workflow: steps)

An invalid file exits ${EXIT.usage}, after every file has been checked.`;

/** What loading one file gave: the recipe, or every issue found (each naming its path). */
type Checked = { recipe: Recipe; issues?: never } | { recipe?: never; issues: RecipeIssue[] };

/**
 * Reads, parses and loads a recipe file as the runner's intake does (the
 * document, then its `interface.inputs` as a JSON Schema), and compiles it
 * when it is to run. A problem is an issue, never a throw.
 */
function check(file: string, options: Required<LoadOptions>): Checked {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return {
      issues: [
        { path: "(file)", message: `cannot read: ${(error as NodeJS.ErrnoException).code ?? messageOf(error)}` },
      ],
    };
  }
  let recipe: Recipe;
  try {
    recipe = loadRecipe(parseRecipeText(text, file), options);
  } catch (error) {
    if (error instanceof RecipeValidationError) return { issues: error.issues };
    throw error;
  }
  const issues: RecipeIssue[] = [];
  if (recipe.inputs_schema) {
    try {
      fromRecipeJsonSchema(recipe.inputs_schema);
    } catch (error) {
      issues.push({ path: "interface.inputs", message: `not a usable JSON Schema: ${messageOf(error)}` });
    }
  }
  if (options.forRun) {
    try {
      compileRecipe(recipe);
    } catch (error) {
      if (error instanceof RecipeValidationError) issues.push(...error.issues);
      else issues.push({ path: "(document)", message: `cannot be compiled: ${messageOf(error)}` });
    }
  }
  return issues.length > 0 ? { issues } : { recipe };
}

const issueLine = (file: string, issue: RecipeIssue) =>
  `${file}: ${singleLine(issue.path, 300)}: ${singleLine(issue.message, 2_000)}`;

const nodeCount = (recipe: Recipe) => `${recipe.nodes.length} node${recipe.nodes.length === 1 ? "" : "s"}`;

const LOGIC_FLAG = { "logic-handler": { type: "string", multiple: true } } as const;

const validate = defineCommand({
  help,
  flags: { draft: { type: "boolean" }, json: { type: "boolean" }, ...LOGIC_FLAG },
  positionals: true,
  async run({ values, positionals }) {
    if (positionals.length === 0) throw new UsageError("give at least one recipe file to validate");
    const options = { forRun: values.draft !== true, logicHandlers: values["logic-handler"] ?? [] };
    let invalid = 0;
    for (const file of positionals) {
      const checked = check(file, options);
      if (checked.recipe) {
        const { recipe } = checked;
        console.log(
          values.json
            ? JSON.stringify({ file, ok: true, recipe: recipe.name, shape: recipe.shape, nodes: recipe.nodes.length })
            : `ok ${file}: recipe '${recipe.name}' (${recipe.shape}, ${nodeCount(recipe)})`,
        );
        continue;
      }
      invalid++;
      if (values.json) console.log(JSON.stringify({ file, ok: false, issues: checked.issues }));
      else for (const issue of checked.issues) console.error(issueLine(file, issue));
    }
    return invalid > 0 ? EXIT.usage : EXIT.ok;
  },
});

const draw = defineCommand({
  help,
  flags: { format: { type: "string", short: "f" }, out: { type: "string", short: "o" }, ...LOGIC_FLAG },
  positionals: true,
  async run({ values, positionals }) {
    if (positionals.length !== 1) throw new UsageError("give one recipe file to draw");
    const format = values.format ?? "mermaid";
    if (!isGraphFormat(format)) throw new UsageError(`unknown format '${format}'; choose ${GRAPH_FORMATS.join(", ")}`);
    const file = positionals[0]!;
    const checked = check(file, { forRun: true, logicHandlers: values["logic-handler"] ?? [] });
    if (!checked.recipe) {
      for (const issue of checked.issues) console.error(issueLine(file, issue));
      return EXIT.usage;
    }
    const text = renderMachine(compileRecipe(checked.recipe), format);
    if (values.out === undefined) {
      process.stdout.write(text);
      return EXIT.ok;
    }
    try {
      writeFileSync(values.out, text);
    } catch (error) {
      throw new UsageError(`cannot write ${values.out}: ${(error as NodeJS.ErrnoException).code ?? messageOf(error)}`);
    }
    console.log(`wrote recipe '${checked.recipe.name}' as ${format} to ${values.out}`);
    return EXIT.ok;
  },
});

const schema = defineCommand({
  help,
  flags: { shape: { type: "string" } },
  async run({ values }) {
    const schemas = recipeJsonSchemas();
    const shape = values.shape;
    if (shape !== undefined && !(SHAPES as readonly string[]).includes(shape))
      throw new UsageError(`unknown shape '${shape}'; choose ${SHAPES.join(", ")}`);
    const printed =
      shape === "graph" || shape === "workflow"
        ? schemas[shape]
        : {
            $schema: schemas.graph.$schema,
            title: "Coreason recipe (apiVersion coreason.ai/v2)",
            description: "A graph recipe (topology) or a workflow manifest (workflow).",
            anyOf: SHAPES.map((name) => {
              const { $schema: _, ...body } = schemas[name];
              return { title: `${name} recipe`, ...body };
            }),
          };
    console.log(JSON.stringify(printed, null, 2));
    return EXIT.ok;
  },
});

export default defineCommandGroup({ help, subcommands: { validate, draw, schema } });

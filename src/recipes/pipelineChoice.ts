import { resolve } from "node:path";
import { type PipelineChoice, parsePipelineName } from "../contracts/pipeline.ts";
import { messageOf } from "../errors.ts";
import { readRecipeForRunner } from "./load.ts";

/**
 * A pipeline named as `--pipeline` and `CONCLAVE_PIPELINE` name it
 * (`cognitive`, `agents`, `agents+council`, `recipe:FILE`), ready to run:
 * a recipe's file is read (relative to `cwd`) and checked as `conclave run`
 * checks it. Anything wrong is `unusable(message)`, in one line that names
 * what was given.
 */
export function readPipeline(
  text: string,
  unusable: (message: string) => Error,
  cwd: string = process.cwd(),
): PipelineChoice {
  const name = parsePipelineName(text);
  if ("error" in name) return fail(unusable, name.error);
  if (name.kind !== "recipe") return name;
  try {
    const { document } = readRecipeForRunner(resolve(cwd, name.file), (message) => new Error(message));
    return { kind: "recipe", document };
  } catch (error) {
    return fail(unusable, `the pipeline's recipe: ${messageOf(error)}`);
  }
}

const fail = (unusable: (message: string) => Error, message: string): never => {
  throw unusable(message);
};

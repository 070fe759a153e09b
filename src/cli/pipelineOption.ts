/**
 * `--pipeline`, as `conclave up`, `conclave runner` and `conclave send` take
 * it (and any command that starts a runner, such as `conclave dev`): one
 * parser, one help text, one way to hand it to a runner process.
 */
import { resolve } from "node:path";
import { type PipelineChoice, parsePipelineName } from "../contracts/pipeline.ts";
import { readPipeline } from "../recipes/pipelineChoice.ts";
import { UsageError } from "./args.ts";

/** The help lines of `--pipeline` for commands that start a runner (aligned as `conclave up`'s options are). */
export const PIPELINE_HELP = `  --pipeline P     the turn pipeline of sessions that choose none  [$CONCLAVE_PIPELINE, cognitive]:
                   cognitive       the built-in agents, council, voice and critics
                   agents          only your agents (--agents): one agent's answer is the reply,
                                   several are combined by the council and said as it decides
                   agents+council  your agents, then the council and the voice word the reply
                   recipe:FILE     the recipe runs each turn (the message as its input 'message')`;

/**
 * Reads `--pipeline` (a recipe's file read and checked now, relative to the
 * working directory): a bad value is a one-line UsageError. Undefined when
 * the option was not given.
 */
export function pipelineOption(value: string | undefined): PipelineChoice | undefined {
  if (value === undefined) return undefined;
  return readPipeline(value, (message) => new UsageError(`--pipeline ${message}`));
}

/**
 * `--pipeline` for a runner started as a child process: checked here (so a
 * bad value stops the parent command before anything starts), then given as
 * `CONCLAVE_PIPELINE` in the child's environment, a recipe's file made
 * absolute. Spread the result into the child's env; `{}` without the option.
 */
export function pipelineEnv(value: string | undefined): { CONCLAVE_PIPELINE?: string } {
  if (value === undefined) return {};
  pipelineOption(value);
  const name = parsePipelineName(value);
  if ("error" in name) return {}; // pipelineOption threw already
  return { CONCLAVE_PIPELINE: name.kind === "recipe" ? `recipe:${resolve(name.file)}` : value.trim() };
}

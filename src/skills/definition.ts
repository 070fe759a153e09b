/**
 * A skill (the Coreason `SkillDefinition`, ../shared/RECIPES.md): instructions
 * an agent is given when the skill is loaded. `eager` skills are in context
 * from the start; `lazy` ones only when a message is close to their
 * `trigger_intent` (`router.ts`); `user` ones when the user asks for them.
 */
import { z } from "zod";
import { SkillId } from "../contracts/skill.ts";
import { ConclaveError } from "../errors.ts";

/** A skill definition that cannot be used: the message names the file and the field. */
export class SkillDefinitionError extends ConclaveError<"invalid_skill"> {
  constructor(message: string) {
    super("invalid_skill", message);
  }
}

/** How a skill comes into an agent's context. */
export const LoadStrategy = z.enum(["eager", "lazy", "user"]);
export type LoadStrategy = z.infer<typeof LoadStrategy>;

/**
 * What a skill file holds (one skill); `instructions` or `instructions_uri`, exactly one.
 * A file without an `id` takes its `name` as the id (load.ts), as the Agent Skills
 * format's `SKILL.md` (only `name` and `description`) is written.
 */
export const SkillDefinition = z
  .strictObject({
    id: SkillId,
    name: z.string().min(1).max(200),
    description: z.string().max(2_000),
    /** The instructions themselves (markdown or plain text). */
    instructions: z.string().min(1).max(64_000).optional(),
    /** A file holding them, relative to the skill's own file (a `file:` URI or a plain path). */
    instructions_uri: z.string().min(1).max(1_000).optional(),
    /** Default `eager`. */
    load_strategy: LoadStrategy.default("eager"),
    /** What a message asks for when this skill is relevant: required for `lazy` skills, indexed for routing. */
    trigger_intent: z.string().min(1).max(1_000).optional(),
    /** Conclave's addition: the JSON Schema a completed skill's output must satisfy. */
    output_schema: z.record(z.string(), z.unknown()).optional(),
    /** Conclave's addition: skills whose outputs this one reads (`getConsumedOutputs`). */
    consumes: z.array(SkillId).max(32).optional(),
    /** Free labels. */
    tags: z.array(z.string().max(64)).max(32).optional(),
    /**
     * The Agent Skills format's optional fields (a `SKILL.md` written for other tools):
     * accepted and kept, not acted on.
     */
    license: z.string().max(500).optional(),
    compatibility: z.string().max(500).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    "allowed-tools": z.union([z.string().max(2_000), z.array(z.string().max(200)).max(100)]).optional(),
  })
  .superRefine((skill, ctx) => {
    if ((skill.instructions === undefined) === (skill.instructions_uri === undefined))
      ctx.addIssue({
        code: "custom",
        path: ["instructions"],
        message: "give instructions or instructions_uri, not both",
      });
    if (skill.load_strategy === "lazy" && skill.trigger_intent === undefined)
      ctx.addIssue({ code: "custom", path: ["trigger_intent"], message: "a lazy skill needs a trigger_intent" });
  });
export type SkillDefinition = z.infer<typeof SkillDefinition>;

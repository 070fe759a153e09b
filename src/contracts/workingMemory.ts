/**
 * Working memory (docs/knowledge.md, "Working memory"): a structured summary of one session, of the
 * shape a runner declares (a JSON Schema), which the session's agents read in their context and
 * change through the `update_working_memory` tool. Every change is an event of the session's log.
 */
import { z } from "zod";
import { AgentId, SessionId, TurnId } from "./ids.ts";

/** The tool through which an agent changes the session's working memory (list it in `defineAgent`'s `tools`). */
export const WORKING_MEMORY_TOOL = "update_working_memory";

/** The largest working memory, in bytes of its JSON text: an update that would make it larger is refused. */
export const WORKING_MEMORY_MAX_BYTES = 16_384;

/** A working memory's content: a JSON object, valid against the runner's declared schema. */
export const WorkingMemoryContent = z.record(z.string(), z.unknown());
export type WorkingMemoryContent = z.infer<typeof WorkingMemoryContent>;

/** What an agent reads of the session's working memory (`AgentContext.working_memory`, `ctx.memory.working`). */
export const WorkingMemoryView = z.object({
  /** How many updates made it (0: none yet, `memory` is empty). */
  version: z.number().int().min(0),
  memory: WorkingMemoryContent,
});
export type WorkingMemoryView = z.infer<typeof WorkingMemoryView>;

/** The events of working memory in a turn's log. */
export const WorkingMemoryEventPayloads = {
  /**
   * An agent changed the session's working memory (`update_working_memory`): `memory` is the whole
   * memory after the change (the last such event of the session is its working memory), `changed`
   * the top-level fields the update named, `version` the count of updates so far.
   */
  WORKING_MEMORY_UPDATED: z.object({
    call_id: z.string(),
    agent_id: AgentId,
    version: z.number().int().min(1),
    changed: z.array(z.string()),
    memory: WorkingMemoryContent,
  }),
} as const;

/** A session's working memory, as a client reads it (`client.workingMemory`, `conclave session memory`). */
export const WorkingMemoryRecord = z.object({
  session_id: SessionId,
  version: z.number().int().min(0),
  memory: WorkingMemoryContent,
  /** The turn, agent and time of the last update; absent while there was none. */
  turn_id: TurnId.optional(),
  updated_by: AgentId.optional(),
  updated_at: z.string().optional(),
});
export type WorkingMemoryRecord = z.infer<typeof WorkingMemoryRecord>;

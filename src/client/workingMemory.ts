import type { NatsConnection } from "@nats-io/nats-core";
import { checkSessionId } from "../contracts/ids.ts";
import type { WorkingMemoryRecord } from "../contracts/workingMemory.ts";
import { readWorkingMemory } from "../eventlog/workingMemoryLog.ts";

/**
 * A session's working memory (docs/knowledge.md, "Working memory"), read from
 * its event log: the memory of its last WORKING_MEMORY_UPDATED, with who made
 * it and when; version 0 and `{}` while no agent has changed it (or once the
 * session is erased).
 */
export async function readSessionWorkingMemory(nc: NatsConnection, sessionId: string): Promise<WorkingMemoryRecord> {
  checkSessionId(sessionId);
  const { last } = await readWorkingMemory(nc, sessionId);
  if (!last) return { session_id: sessionId, version: 0, memory: {} };
  const { event, time } = last;
  return {
    session_id: sessionId,
    version: event.payload.version,
    memory: event.payload.memory,
    turn_id: event.turn_id,
    updated_by: event.payload.agent_id,
    updated_at: time,
  };
}

import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";
import { Episode } from "./workspace.ts";

export const MemoryRetrieveRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  limit: z.number().int().min(0).max(50).default(3),
});
export type MemoryRetrieveRequest = z.infer<typeof MemoryRetrieveRequest>;

export const MemoryRetrieveReply = z.object({
  episodes: z.array(Episode),
  user_facts: z.array(z.string()),
  open_threads: z.array(z.string()),
});
export type MemoryRetrieveReply = z.infer<typeof MemoryRetrieveReply>;

export const MemoryCommitRequest = z.object({ episode: Episode });
export type MemoryCommitRequest = z.infer<typeof MemoryCommitRequest>;

export const MemoryCommitReply = z.object({
  summary: z.string(),
  stored: z.boolean(),
});
export type MemoryCommitReply = z.infer<typeof MemoryCommitReply>;

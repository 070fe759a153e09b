import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { encodeJson } from "../bus/codec.ts";
import { streams, subjects } from "../bus/subjects.ts";
import { Episode } from "../contracts/workspace.ts";

const decoder = new TextDecoder();

/**
 * Episodic memory in JetStream: one message per committed turn on
 * `conclave.memory.episode.<session>.<turn>`. Recent episodes are read back
 * with direct gets by subject, so retrieval costs one lookup per episode
 * whatever the stream's size.
 */
export class EpisodeStore {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {}

  async commit(episode: Episode): Promise<void> {
    await this.js.publish(subjects.memoryEpisode(episode.session_id, episode.turn_id), encodeJson(episode), {
      msgID: `episode.${episode.session_id}.${episode.turn_id}`,
    });
  }

  /** Up to `limit` episodes of turns before `beforeTurn`, oldest first. */
  async recent(sessionId: string, beforeTurn: number, limit: number): Promise<Episode[]> {
    const turns = Array.from({ length: Math.min(limit, beforeTurn - 1) }, (_, index) => beforeTurn - 1 - index);
    const found = await Promise.all(
      turns.map((turn) =>
        this.jsm.streams.getMessage(streams.memory, { last_by_subj: subjects.memoryEpisode(sessionId, turn) }),
      ),
    );
    return found
      .filter((msg) => msg !== null)
      .map((msg) => Episode.parse(JSON.parse(decoder.decode(msg.data))))
      .reverse();
  }
}

import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { encodeRecord } from "../bus/codec.ts";
import { isConflict } from "../bus/jsonKv.ts";
import { streams, subjects } from "../bus/subjects.ts";
import { parseRecord } from "../contracts/format.ts";
import { turnKey } from "../contracts/turnKey.ts";
import { Episode } from "../contracts/workspace.ts";

const decoder = new TextDecoder();

const parseEpisode = (data: Uint8Array): Episode | null => {
  try {
    const parsed = parseRecord(Episode, JSON.parse(decoder.decode(data)), "episode");
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
};

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
    /** Told about a stored message that is not a valid episode (it is skipped). */
    private readonly onInvalid?: (subject: string, seq: number) => void,
  ) {}

  /**
   * Stores the turn's episode once, by turn id: a commit of the same turn again (a retry, a
   * takeover) leaves the stored one, within the stream's duplicate window (`msgID`) and after
   * it (the write expects no message on the turn's subject yet).
   */
  async commit(episode: Episode): Promise<void> {
    try {
      await this.js.publish(subjects.memoryEpisode(episode.session_id, episode.turn_id), encodeRecord(episode), {
        msgID: `episode.${turnKey(episode.session_id, episode.turn_id)}`,
        expect: { lastSubjectSequence: 0 },
      });
    } catch (error) {
      if (!isConflict(error)) throw error; // else the turn's episode is stored already
    }
  }

  /** Up to `limit` episodes of turns before `beforeTurn`, oldest first. */
  async recent(sessionId: string, beforeTurn: number, limit: number): Promise<Episode[]> {
    const turns = Array.from({ length: Math.min(limit, beforeTurn - 1) }, (_, index) => beforeTurn - 1 - index);
    const found = await Promise.all(
      turns.map((turn) =>
        this.jsm.streams.getMessage(streams.memory, { last_by_subj: subjects.memoryEpisode(sessionId, turn) }),
      ),
    );
    // A stored episode that is not one (damaged, or written by someone who should not have) is left out, not fatal.
    return found
      .filter((msg) => msg !== null)
      .flatMap((msg) => {
        const episode = parseEpisode(msg.data);
        if (!episode) this.onInvalid?.(msg.subject, msg.seq);
        return episode ? [episode] : [];
      })
      .reverse();
  }
}

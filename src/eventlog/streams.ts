import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import { JetStreamApiCodes, JetStreamApiError, StorageType } from "@nats-io/jetstream";
import { streams, subjects } from "../bus/subjects.ts";

/** Creates a stream, or leaves an existing one as it is (so operators may tune limits by hand). */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  try {
    await jsm.streams.info(config.name);
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound) throw error;
    try {
      await jsm.streams.add(config);
    } catch (addError) {
      // Another process created it between our info and add: that is fine.
      if (!(addError instanceof JetStreamApiError) || !/already in use/.test(addError.message)) throw addError;
    }
  }
}

/** The event log: every turn's events, file-backed; `msgID` dedup over two minutes. */
export const ensureEventStream = (jsm: JetStreamManager) =>
  ensureStream(jsm, {
    name: streams.events,
    subjects: [subjects.allEvents],
    storage: StorageType.File,
    duplicate_window: 120_000_000_000,
  });

/** Episodic memory: one message per committed turn. */
export const ensureMemoryStream = (jsm: JetStreamManager) =>
  ensureStream(jsm, {
    name: streams.memory,
    subjects: [subjects.allEpisodes],
    storage: StorageType.File,
    duplicate_window: 120_000_000_000,
  });

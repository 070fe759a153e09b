import { isStreamNotFound } from "../eventlog/streams.ts";

/**
 * A read that finds nothing because nothing was ever written (a fresh server:
 * no turn has created the stream yet) is an empty result, not a failure.
 */
export async function emptyWhenNotStored<T>(read: Promise<T[]>): Promise<T[]> {
  try {
    return await read;
  } catch (error) {
    if (isStreamNotFound(error)) return [];
    throw error;
  }
}

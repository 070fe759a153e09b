import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

/** True when JetStream says the stream (or KV bucket) does not exist: nothing has been stored in it yet. */
export const isStreamNotFound = (error: unknown): boolean =>
  error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;

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

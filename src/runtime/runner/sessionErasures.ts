import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { decodeJson } from "../../bus/codec.ts";
import { subjects } from "../../bus/subjects.ts";
import { SessionId } from "../../contracts/ids.ts";

const SessionErased = z.object({ session_id: SessionId });

/**
 * Calls `onErased` for every session erased anywhere (`conclave.session.erased`,
 * published by the runner that served the erase), so a runner that holds the
 * session in memory forgets it. Returns the unsubscribe.
 */
export function followErasures(nc: NatsConnection, onErased: (sessionId: string) => void): () => void {
  const subscription = nc.subscribe(subjects.sessionErased, {
    callback: (error, msg) => {
      if (error) return;
      try {
        onErased(decodeJson(msg.data, SessionErased, "session erasure").session_id);
      } catch {
        // Not an erasure: nothing to forget.
      }
    },
  });
  return () => subscription.unsubscribe();
}

/**
 * The wire contract of a follow-watch's renewals (`conclave.turn.watch.<session>`):
 * the requester publishes `{ "renew": "<watch_id>" }` on the watch's subject
 * every WATCH_RENEW_MS, and the runner serving it ends a watch none came for.
 */
import { z } from "zod";

/** How often a requester renews its follow-watch, in ms (the client's watchTurn does). */
export const WATCH_RENEW_MS = 5_000;

/** A requester's name for its watch: what its renewals name. */
export const WatchId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a watch id is 1-64 of A-Z a-z 0-9 _ -");

/** A renewal of a follow-watch, published (no reply wanted) on the watch's own subject. */
export const WatchRenewal = z.object({ renew: WatchId }).strict();
export type WatchRenewal = z.infer<typeof WatchRenewal>;

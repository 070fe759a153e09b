/**
 * A stored MEMORY_RETRIEVED names what it gave by reference (issue 41): the
 * tests that check what a turn's context got read the text back as a
 * taken-over turn does, from the memory service (a read by id, nothing ranked).
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { requestJson } from "../../src/bus/request.ts";
import { subjects } from "../../src/bus/subjects.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { isRetrievedRefs, MemoryRetrieveReply } from "../../src/contracts/memory.ts";

/**
 * The records the turn's MEMORY_RETRIEVED (among `events`) names, as the memory service holds them
 * now; `nc` must be a runner's (it requests `conclave.memory.retrieve`). Throws when the turn has none.
 */
export async function retrievedOf(nc: NatsConnection, events: readonly EngineEvent[]): Promise<MemoryRetrieveReply> {
  const event = events.find((each) => each.kind === "MEMORY_RETRIEVED");
  if (event?.kind !== "MEMORY_RETRIEVED") throw new Error("the turn retrieved no memory");
  if (!isRetrievedRefs(event.payload)) throw new Error("MEMORY_RETRIEVED embeds its text: the log must reference it");
  const request = {
    session_id: event.session_id,
    turn_id: event.turn_id,
    user_message: "",
    limit: 0,
    resolve: event.payload.refs,
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await requestJson(nc, subjects.memoryRetrieve, request, MemoryRetrieveReply, { timeoutMs: 10_000 });
    } catch (error) {
      // The end of the turn just watched reaches the worker a moment after its last event, and stops the
      // calls of that turn open then: this one, if it was. Asked again, it is not open when the end arrives.
      if (!(error instanceof RemoteCallError && error.code === "cancelled") || attempt === 3) throw error;
    }
  }
}

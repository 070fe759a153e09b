/**
 * Until `conclave/client` lands: a ChatClient from submitTurn and watchTurn.
 * Aborting stops following the turn here only (the runner finishes it); the
 * history is read through a runner.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { readThroughRunner, submitTurn, watchTurn } from "../client/turns.ts";
import type { EngineEvent } from "../contracts/events.ts";
import type { ChatClient, ChatTurnStream } from "./controller.ts";

/** A ChatClient over `nc` that submits and follows turns, without cross-process cancellation. */
export function followingClient(nc: NatsConnection): ChatClient {
  return {
    async *events(sessionId) {
      yield* await readThroughRunner(nc, sessionId, { timeoutMs: 3_000 });
    },
    submit(sessionId, text, { signal }): ChatTurnStream {
      const ack = submitTurn(nc, sessionId, { text });
      const queue: EngineEvent[] = [];
      let finished = false;
      let failure: unknown = null;
      let wake: () => void = () => {};
      const woken = () =>
        new Promise<void>((resolve) => {
          wake = resolve;
        });
      ack
        .then((accepted) =>
          watchTurn(nc, accepted, (event) => {
            queue.push(event);
            wake();
          }),
        )
        .catch((error: unknown) => {
          failure = error;
        })
        .finally(() => {
          finished = true;
          wake();
        });
      signal?.addEventListener("abort", () => wake(), { once: true });
      return Object.assign(
        {
          async *[Symbol.asyncIterator]() {
            for (;;) {
              const next = woken();
              while (queue.length > 0) yield queue.shift()!;
              if (signal?.aborted) return;
              if (finished) {
                if (failure) throw failure;
                return;
              }
              await next;
            }
          },
        },
        { ack },
      );
    },
  };
}

import { isInboxReply } from "../bus/replies.ts";
import type { EndpointOptions, ServiceGroup, ServiceMsg } from "../bus/service.ts";

/**
 * Counts what the guard drops and says so at most once per `everyMs`, so a
 * flood of deliveries is one log line, not one per message, and no dead letter.
 */
export class IgnoredMessages {
  #count = 0;
  #lastReport = 0;
  #lastSubject = "";
  constructor(
    private readonly report: (count: number, lastSubject: string) => void,
    private readonly everyMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** How many were dropped so far. */
  get count(): number {
    return this.#count;
  }

  note(msg: ServiceMsg): void {
    this.#count += 1;
    this.#lastSubject = msg.subject;
    const now = this.now();
    if (now - this.#lastReport >= this.everyMs) {
      this.#lastReport = now;
      this.report(this.#count, this.#lastSubject);
    }
  }
}

/**
 * The service group with every endpoint's handler behind `isInboxReply`:
 * messages that are not requests (a JetStream push consumer someone aimed at
 * a worker subject delivers with a `$JS.ACK…` reply; a plain publish has none)
 * never reach the actor, get no reply and no dead letter, and are only counted.
 */
export function requestsOnly(group: ServiceGroup, ignored: IgnoredMessages): ServiceGroup {
  return {
    addEndpoint(name: string, options: EndpointOptions) {
      const handler = options.handler;
      group.addEndpoint(name, {
        ...options,
        handler: (msg: ServiceMsg) => {
          if (!isInboxReply(msg.reply, "worker")) return ignored.note(msg);
          handler(msg);
        },
      });
    },
  };
}

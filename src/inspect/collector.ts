import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { describeIssues } from "../contracts/issues.ts";
import { messageOf } from "../errors.ts";
import { InspectionRecord, inspectSubjectAll } from "./record.ts";

const decoder = new TextDecoder();

/**
 * Receives every process's inspection records from `conclave.inspect.>`.
 * Anything that is not a valid record is reported to `onInvalid` and skipped:
 * a bad message never stops the collector.
 */
export function collectInspection(
  nc: NatsConnection,
  onRecord: (record: InspectionRecord) => void,
  onInvalid: (subject: string, reason: string) => void = () => {},
): Subscription {
  return nc.subscribe(inspectSubjectAll, {
    callback: (error, msg) => {
      if (error) return;
      let body: unknown;
      try {
        body = JSON.parse(decoder.decode(msg.data));
      } catch {
        onInvalid(msg.subject, "not JSON");
        return;
      }
      const parsed = InspectionRecord.safeParse(body);
      if (!parsed.success) {
        onInvalid(msg.subject, describeIssues(parsed.error, { root: "record", limit: 1, join: "; " }));
        return;
      }
      try {
        onRecord(parsed.data);
      } catch (failure) {
        onInvalid(msg.subject, `handler failed: ${messageOf(failure)}`);
      }
    },
  });
}

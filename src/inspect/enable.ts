import type { NatsConnection } from "@nats-io/nats-core";
import { lenientSetting } from "../config/load.ts";
import { createInspectionPublisher, type InspectionPublisher } from "./publisher.ts";
import { inspectSubject, processName } from "./record.ts";

export const INSPECT_HELP = `  --inspect          stream this process's actor inspection events to conclave.inspect.<role>:<pid>
                     for \`conclave viewer\` or \`conclave inspect\`   [$CONCLAVE_INSPECT=1]`;

/** On with `--inspect`, or with CONCLAVE_INSPECT set to 1/true/yes. */
export const inspectionWanted = (flag: boolean | undefined, env = process.env): boolean =>
  flag === true || lenientSetting(env, "CONCLAVE_INSPECT");

/** The inspection observer for this process when inspection is wanted, else undefined. */
export function processInspection(
  nc: NatsConnection,
  role: string,
  flag: boolean | undefined,
): { observer: InspectionPublisher; subject: string } | undefined {
  if (!inspectionWanted(flag)) return undefined;
  const name = processName(role);
  return { observer: createInspectionPublisher(nc, name), subject: inspectSubject(name) };
}

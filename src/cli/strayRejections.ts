import { messageOf, singleLine } from "../errors.ts";
import type { Logger } from "../telemetry/log.ts";

/**
 * For the long-lived processes (runner, worker): a promise rejection nobody
 * handled is logged on one line and the process goes on, instead of Node's
 * default of ending it — every handler boundary already answers its peer, so
 * what escapes is a bug to report, not a reason to drop every turn in flight.
 * (A thrown exception still ends the process; its supervisor restarts it.)
 */
export function logStrayRejections(log: Logger): void {
  process.on("unhandledRejection", (reason) => {
    log.error(`unhandled rejection (kept running): ${singleLine(messageOf(reason))}`, {
      ...(reason instanceof Error && reason.stack ? { stack: reason.stack } : {}),
    });
  });
}

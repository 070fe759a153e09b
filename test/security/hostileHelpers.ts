import { createHash } from "node:crypto";
import { type Msg, type NatsConnection, PermissionViolationError } from "@nats-io/nats-core";
import { expect } from "vitest";
import type { DeadLetter } from "../../src/bus/deadLetters.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { ErrorReply } from "../../src/contracts/errors.ts";
import { deadLetterCounts, readDeadLetters } from "../helpers/fuzz.ts";

/** The finding's request: invalid JSON whose parse error quotes a newline. */
export const NEWLINE_JSON = '{\n"text":\nhello}';
/** Every kind of character a header or a log line must not carry raw. */
export const CONTROL = "a\r\nb\u0000c\u0007d\u001b[31me\u2028f\u2029g\u007f\u0085h";

const header = (msg: Msg, name: string): string | undefined => msg.headers?.get(name) || undefined;

/** An error reply, checked to be header-safe and one line; returns its body. */
export function expectErrorReply(msg: Msg): ErrorReply {
  const description = header(msg, "Nats-Service-Error") ?? "";
  expect(description.length).toBeGreaterThan(0);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  expect(description).not.toMatch(/[\u0000-\u001f]/);
  expect(description.length).toBeLessThanOrEqual(256);
  const body = ErrorReply.parse(msg.json());
  expect(body.error.message).not.toMatch(/[\r\n]/);
  return body;
}

/** The reply is either an ack (JSON without `error`) or a header-safe error reply. */
export function expectAnswered(msg: Msg): "ack" | "error" {
  if (header(msg, "Nats-Service-Error-Code")) {
    expectErrorReply(msg);
    return "error";
  }
  const body = msg.json<Record<string, unknown>>();
  expect(body).not.toHaveProperty("error");
  return "ack";
}

/** The pid of each process, and that it is still running (no exit, so no restart). */
export const liveness = (processes: ConclaveProcess[]) =>
  processes.map((p) => ({ name: p.name, pid: p.child.pid, exitCode: p.child.exitCode, signal: p.child.signalCode }));

/** Publish violations arrive as connection status errors: collects them for the connection's life. */
export function violationsOf(nc: NatsConnection): PermissionViolationError[] {
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "error" && status.error instanceof PermissionViolationError) seen.push(status.error);
    }
  })();
  return seen;
}

/** Dead letters on `conclave.dlq.<source>` whose original subject is `subject`. */
export async function lettersFor(nc: NatsConnection, source: string, subject: string): Promise<DeadLetter[]> {
  return (await readDeadLetters(nc, `conclave.dlq.${source}`))
    .map(({ letter }) => letter)
    .filter((letter) => letter.subject === subject);
}

/** How many dead letters `conclave.dlq.<source>` holds. */
export const letterCount = async (nc: NatsConnection, source: string): Promise<number> =>
  (await deadLetterCounts(nc, `conclave.dlq.${source}`))[`conclave.dlq.${source}`] ?? 0;

export const sha256 = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex");

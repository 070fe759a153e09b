import { type ParseArgsConfig, parseArgs } from "node:util";
import { type BusOptions, busOptions, type Role } from "../bus/connection.ts";
import { SessionId } from "../contracts/ids.ts";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError, messageOf } from "../errors.ts";

/** A mistake in how a command was called: printed with a pointer to the command's help, exit status 2. */
export class UsageError extends ConclaveError<"usage"> {
  constructor(message: string) {
    super("usage", message);
  }
}

/** The flags of every command that connects to NATS: defineCommand (command.ts) adds them to a command with a role. */
export const CONNECTION_FLAGS = {
  "nats-url": { type: "string" },
  user: { type: "string" },
  password: { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export const CONNECTION_HELP = `Connection (flags win over the environment):
  --nats-url URL     NATS server(s), comma-separated   [$CONCLAVE_NATS_URL, nats://127.0.0.1:4222]
  --user NAME        NATS user                         [$CONCLAVE_NATS_USER, the role's dev user]
  --password SECRET  NATS password; visible to anyone on this machine (ps), so it prints a
                     warning: prefer $CONCLAVE_NATS_PASSWORD or $CONCLAVE_NATS_PASSWORD_FILE
Environment only (secrets never need argv): CONCLAVE_NATS_NKEY_SEED_FILE (an nkey seed) or
  CONCLAVE_NATS_CREDS_FILE (a .creds file) instead of a user; CONCLAVE_NATS_TLS_CA, _TLS_CERT,
  _TLS_KEY (PEM files: any of them, or a tls:// URL, requires TLS). CONCLAVE_NATS_<ROLE>_<NAME>,
  e.g. CONCLAVE_NATS_RUNNER_NKEY_SEED_FILE, wins over CONCLAVE_NATS_<NAME>.
  CONCLAVE_ENV: development (default) or production; see docs/production.md.`;

/** Parses `argv` strictly against `options`; a bad flag throws a UsageError. */
export function parse<O extends ParseArgsConfig["options"]>(
  argv: string[],
  options: O,
  allowPositionals = false,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: boolean; strict: true }>> {
  try {
    return parseArgs({ args: argv, options, allowPositionals, strict: true });
  } catch (error) {
    throw new UsageError(messageOf(error));
  }
}

/** What `--password` prints on stderr: the flag works, but every user of the machine can read it. */
export const PASSWORD_FLAG_WARNING =
  "conclave: warning: --password is visible to every user of this machine (ps, /proc/<pid>/cmdline); set CONCLAVE_NATS_PASSWORD or CONCLAVE_NATS_PASSWORD_FILE instead";

/** Connection options from the connection flags, then the environment (busOptions). */
export function connectionFrom(
  values: { "nats-url"?: string; user?: string; password?: string },
  role: Role,
  persistent: boolean,
): BusOptions & { servers: string[] } {
  if (values.password) process.stderr.write(`${PASSWORD_FLAG_WARNING}\n`);
  return busOptions(role, {
    ...(values["nats-url"] ? { servers: values["nats-url"] } : {}),
    ...(values.user ? { user: values.user } : {}),
    ...(values.password ? { password: values.password } : {}),
    persistent,
  });
}

/** Resolves on the first SIGINT or SIGTERM. */
export const untilInterrupted = () =>
  new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });

/** The `--session` flag, required and checked as the protocol does. */
export function sessionArg(value: string | undefined): string {
  if (!value) throw new UsageError("--session is required");
  const session = SessionId.safeParse(value);
  if (!session.success) throw new UsageError(describeIssues(session.error, { root: "", join: "; " }));
  return session.data;
}

/** The one positional argument that names a turn (a number from 1), or a usage error showing `example`. */
export function turnArg(positionals: readonly string[], example: string): number {
  const turnId = Number(positionals[0]);
  if (positionals.length !== 1 || !Number.isInteger(turnId) || turnId < 1)
    throw new UsageError(`give the turn, a number from 1, e.g. ${example}`);
  return turnId;
}

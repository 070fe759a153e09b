/**
 * The one way a `conclave` command is defined: it declares its help, flags
 * and NATS role, and {@link defineCommand} does the rest every command needs
 * (parsing, `--help`, opening the connection and closing it). Failures are
 * thrown, and main.ts reports them (one line, or JSON with `--json`) with
 * their exit status.
 */
import type { ParseArgsConfig } from "node:util";
import type { NatsConnection } from "@nats-io/nats-core";
import { connectBus, type Role } from "../bus/connection.ts";
import { setupTracing, tracingServiceName } from "../telemetry/setup.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, UsageError } from "./args.ts";
import { EXIT, EXIT_HELP } from "./failures.ts";

/** A command's own flags, as node:util's parseArgs takes them. */
export type Flags = NonNullable<ParseArgsConfig["options"]>;

/** The values of `flags` once parsed. */
export type FlagValues<F extends Flags> = ReturnType<typeof parse<F>>["values"];

/** How a command connects: the connection flags, then the environment (see docs/operations.md). */
export type ConnectionOptions = ReturnType<typeof connectionFrom>;

/** The command's NATS connection, opened at the first call: see {@link CommandInput.bus}. */
export type Bus = (role?: Role) => Promise<NatsConnection>;

/** What a command's `run` is given. */
export interface CommandInput<F extends Flags> {
  values: FlagValues<F>;
  /** The words that are not flags (only for a command with `positionals`). */
  positionals: string[];
  /**
   * The NATS connection, in the command's role unless `role` says otherwise
   * (one role a run): opened at the first call, so the command checks its
   * arguments first and a usage error never waits on NATS; closed once `run`
   * is done.
   */
  bus: Bus;
  /** What the connection is opened with, e.g. to say where it serves. */
  connectionOptions(role?: Role): ConnectionOptions;
}

/** What a command declares: see {@link defineCommand}. */
export interface CommandSpec<F extends Flags> {
  /** What `--help` prints, followed by the connection flags (a command with a role) and the exit statuses. */
  help: string;
  /** The command's own flags; `--help` (`-h`), and with a role the connection flags, come with every command. */
  flags: F;
  /** Whether the command takes words besides its flags (`conclave send --session s "hello"`). */
  positionals?: boolean;
  /** The role it connects to NATS in; a command without one has no connection and takes no connection flags. */
  role?: Role;
  /**
   * A process that serves until interrupted (runner, worker, viewer): its
   * connection waits for NATS and reconnects forever, and is drained at the end.
   */
  longLived?: boolean;
  /** Does the work; returns the exit status. */
  run(input: CommandInput<F>): Promise<number>;
}

/** A command, as main.ts runs it. */
export interface Command {
  /** The whole text of `--help`. */
  help: string;
  /** Every flag it takes: its own, `--help`, and with a role the connection flags (a group: its subcommands'). */
  flags: Flags;
  /** Runs the command's arguments (after its name): its exit status, or a thrown failure. */
  run(argv: string[]): Promise<number>;
}

const HELP_FLAG = { help: { type: "boolean", short: "h" } } as const satisfies Flags;

/**
 * A `conclave` command: its arguments parsed strictly (a bad flag is a usage
 * error), `--help` printed, and, for a command with a role, its connection
 * opened when `run` first asks for it and closed when `run` ends, whether it
 * returned or threw.
 */
export function defineCommand<const F extends Flags>(spec: CommandSpec<F>): Command {
  const help = [spec.help, ...(spec.role ? [CONNECTION_HELP] : []), EXIT_HELP].join("\n\n");
  const flags: Flags = { ...HELP_FLAG, ...(spec.role ? CONNECTION_FLAGS : {}), ...spec.flags };
  return {
    help,
    flags,
    async run(argv) {
      const { values, positionals } = parse(argv, flags, spec.positionals ?? false);
      if (values.help) {
        console.log(help);
        return EXIT.ok;
      }
      // Traced when the OTEL_* variables ask for it (src/telemetry/setup.ts); spans left are sent on the way out.
      const tracing = spec.role ? await setupTracing({ serviceName: tracingServiceName(spec.role) }) : undefined;
      const connection = lazyConnection(values as ConnectionValues, spec);
      let done = false;
      try {
        const status = await spec.run({
          values: values as FlagValues<F>,
          positionals,
          bus: connection.open,
          connectionOptions: connection.options,
        });
        done = true;
        return status;
      } finally {
        await connection.close(done);
        await tracing?.shutdown();
      }
    },
  };
}

/** The connection flags' values. */
type ConnectionValues = Parameters<typeof connectionFrom>[0];

/** A connection opened on first use, in one role. */
function lazyConnection(values: ConnectionValues, spec: { role?: Role; longLived?: boolean }) {
  const optionsByRole = new Map<Role, ConnectionOptions>();
  let opened: { role: Role; nc: Promise<NatsConnection> } | undefined;
  const roleOf = (role: Role | undefined): Role => {
    if (role === undefined) throw new Error("this command connects to NATS in no role");
    return role;
  };
  // Computed once a role: it warns about --password on stderr.
  const options = (role = spec.role): ConnectionOptions => {
    const chosen = roleOf(role);
    const known = optionsByRole.get(chosen) ?? connectionFrom(values, chosen, spec.longLived === true);
    optionsByRole.set(chosen, known);
    return known;
  };
  return {
    options,
    open(role = spec.role): Promise<NatsConnection> {
      const chosen = roleOf(role);
      if (opened && opened.role !== chosen) throw new Error(`already connected as ${opened.role}, not ${chosen}`);
      opened ??= { role: chosen, nc: connectBus(options(chosen)) };
      return opened.nc;
    },
    /** A long-lived command that ended well lets its subscriptions finish; otherwise the connection just closes. */
    async close(done: boolean): Promise<void> {
      const nc = await opened?.nc.catch(() => undefined);
      if (!nc) return;
      if (done && spec.longLived) await nc.drain();
      else await nc.close();
    },
  };
}

/**
 * A command whose first word picks a subcommand (`conclave recipe validate …`),
 * each a command of its own; `--help` (or `help`) in that place prints `help`.
 */
export function defineCommandGroup(spec: { help: string; subcommands: Record<string, Command> }): Command {
  const help = [spec.help, EXIT_HELP].join("\n\n");
  const names = Object.keys(spec.subcommands);
  return {
    help,
    // What any of its subcommands takes (`conclave recipe validate --json` makes `recipe` a --json command).
    flags: Object.assign({}, ...Object.values(spec.subcommands).map((subcommand) => subcommand.flags)),
    async run([name, ...rest]) {
      if (name === undefined)
        throw new UsageError(`give a subcommand: ${names.slice(0, -1).join(", ")} or ${names.at(-1)}`);
      if (name === "--help" || name === "-h" || name === "help") {
        console.log(help);
        return EXIT.ok;
      }
      const subcommand = Object.hasOwn(spec.subcommands, name) ? spec.subcommands[name] : undefined;
      if (!subcommand) throw new UsageError(`unknown subcommand '${name}'; the subcommands are: ${names.join(", ")}`);
      return subcommand.run(rest);
    },
  };
}

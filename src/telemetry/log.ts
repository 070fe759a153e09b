/**
 * Process logs, through pino: one JSON object per line on stderr (stdout stays
 * free for a command's output), readable lines when stderr is a terminal.
 * Every line carries the process's `role` and `pid`; a child logger adds its
 * bindings (e.g. `session_id`, `turn_id`) to each of its lines.
 *
 * CONCLAVE_LOG sets the level: debug, info (the default), warn, error; `quiet`
 * is warn. Warnings and errors always show unless the level is error.
 * Every line is scrubbed of the configured secrets (config/secrets.ts).
 */
import { type DestinationStream, type Level, type Logger as PinoLogger, pino } from "pino";
import pretty from "pino-pretty";
import { lenientSetting } from "../config/load.ts";
import { scrubSecrets } from "../config/secrets.ts";

/** Structured fields of a log line, beside its message. */
export type LogFields = Record<string, unknown>;

/** What the runner, the workers and the CLI log through. */
export interface Logger {
  /** Detail for debugging. */
  debug(message: string, fields?: LogFields): void;
  /** What happened, in normal operation. */
  info(message: string, fields?: LogFields): void;
  /** Something went wrong and was handled. */
  warn(message: string, fields?: LogFields): void;
  /** Something went wrong and was not. */
  error(message: string, fields?: LogFields): void;
  /** A logger whose every line also carries `bindings` (e.g. `{ session_id, turn_id }`). */
  child(bindings: LogFields): Logger;
}

export type LogLevel = Extract<Level, "debug" | "info" | "warn" | "error">;

/**
 * The level CONCLAVE_LOG asks for: `quiet` is warn; unset or unknown is info (a logger must not stop
 * a process: `conclave config` shows an unknown level refused).
 */
export function logLevelFrom(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const wanted = lenientSetting(env, "CONCLAVE_LOG");
  return wanted === "quiet" ? "warn" : wanted;
}

export interface LoggerOptions {
  env?: NodeJS.ProcessEnv;
  /** Where lines go. Default: stderr, written synchronously so nothing is lost at exit. */
  destination?: DestinationStream;
  /** Readable lines instead of JSON. Default: when stderr is a terminal and no destination is given. */
  pretty?: boolean;
}

function adapt(log: PinoLogger): Logger {
  const at =
    (level: LogLevel) =>
    (message: string, fields?: LogFields): void => {
      if (fields) log[level](fields, message);
      else log[level](message);
    };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: (bindings) => adapt(log.child(bindings)),
  };
}

/** A logger for a process playing `role` (runner, worker, viewer, ...). */
export function createLogger(role: string, options: LoggerOptions = {}): Logger {
  const readable = options.pretty ?? (options.destination === undefined && process.stderr.isTTY === true);
  const destination =
    options.destination ??
    (readable
      ? pretty({ destination: 2, sync: true, ignore: "pid,role", messageFormat: "[{role}] {msg}", singleLine: true })
      : pino.destination({ fd: 2, sync: true }));
  return adapt(
    pino(
      {
        level: logLevelFrom(options.env),
        base: { role, pid: process.pid },
        // Level names, not pino's numbers: a line should read without a lookup table.
        formatters: { level: (label) => ({ level: label }) },
        timestamp: pino.stdTimeFunctions.isoTime,
        // The whole line, not a field list (pino's `redact`): a provider's error may quote a key inside a message.
        hooks: { streamWrite: (line) => scrubSecrets(line, options.env) },
      },
      destination,
    ),
  );
}

const silent: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silent,
};

/** Drops every line: the default of code that runs inside tests or other programs. */
export const silentLogger: Logger = silent;

/** A turn's ids as structured log fields, so every line about a turn can be found by session and turn. */
export const turnFields = (sessionId: string, turnId: number): LogFields => ({
  session_id: sessionId,
  turn_id: turnId,
});

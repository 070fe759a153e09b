/**
 * Process logs go to stderr, one line each, prefixed with the process's role,
 * so stdout stays free for a command's output. CONCLAVE_LOG=quiet silences
 * info lines; warnings and errors always show.
 */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function createLogger(name: string, env = process.env): Logger {
  const quiet = env.CONCLAVE_LOG === "quiet";
  const line = (level: string, message: string) => process.stderr.write(`[${name}] ${level}${message}\n`);
  return {
    info: (message) => {
      if (!quiet) line("", message);
    },
    warn: (message) => line("warning: ", message),
    error: (message) => line("error: ", message),
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };

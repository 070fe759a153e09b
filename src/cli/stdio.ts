import { EXIT } from "./failures.ts";

/**
 * A reader that stops reading (`conclave send --json ... | head -1`) is not a
 * failure: the command ends quietly, with status 0. Node ignores SIGPIPE (so a
 * broken NATS socket cannot kill a runner), and a write to a closed pipe comes
 * back as an EPIPE error on stdout; without a listener it would crash the
 * process with a stack trace.
 *
 * A long-lived command (it listens for SIGTERM: up, runner, worker, viewer,
 * inspect) shuts down as on Ctrl-C, so running turns still finish; any other
 * command exits at once, since nobody reads what it would print.
 */
export function exitQuietlyWhenStdoutCloses(): void {
  let closed = false;
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (closed) return;
    closed = true;
    if (error.code !== "EPIPE") {
      process.stderr.write(`conclave: cannot write to stdout (${error.code ?? error.message})\n`);
      process.exit(EXIT.internal);
    }
    if (process.listenerCount("SIGTERM") > 0) process.emit("SIGTERM", "SIGTERM");
    else process.exit(EXIT.ok);
  });
  // Nowhere is left to say anything: stay quiet rather than crash.
  process.stderr.on("error", () => {});
}

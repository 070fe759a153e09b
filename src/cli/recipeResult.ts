import { printable } from "../client/printable.ts";
import type { RecipeRunResult } from "../eventlog/followRun.ts";
import { EXIT, type ExitStatus } from "./failures.ts";

/**
 * How `conclave run` and `conclave resume` end: the final blackboard of a
 * completed run (exit 0, or 1 when it Failed or was Cancelled), or how to
 * answer a suspended one (exit 5). With `--json`, one result line.
 */
export function printRunResult(
  result: RecipeRunResult,
  options: { json?: boolean | undefined; out?: NodeJS.WritableStream; err?: NodeJS.WritableStream } = {},
): ExitStatus {
  const out = options.out ?? process.stdout;
  const err = options.err ?? process.stderr;
  if (options.json) {
    out.write(`${JSON.stringify({ result })}\n`);
  } else if (result.status === "suspended") {
    const role = result.requiredRole ? ` --role ${result.requiredRole}` : "";
    const id = `${result.sessionId}/${result.turnId}`;
    out.write(
      `suspended at '${printable(result.node)}': ${printable(result.prompt)}\n` +
        (result.approval
          ? `answer with: conclave approve ${id} --user-id <you>${role} [--reason …]   (or conclave deny ${id} …)\n`
          : `answer with: conclave resume ${result.turnId} --session ${result.sessionId} --user-id <you>${role} --input '<json>'\n`),
    );
  } else {
    const { outcome } = result;
    if (outcome.status === "Failed")
      err.write(printable(`run failed: ${outcome.error.code}: ${outcome.error.message}\n`));
    else if (outcome.status === "Cancelled") err.write(printable(`run cancelled: ${outcome.reason}\n`));
    else {
      if (outcome.status === "PartialSuccess")
        for (const warning of outcome.warnings) err.write(printable(`warning: ${warning.code}: ${warning.message}\n`));
      // Pretty-printed for a person: JSON escapes C0 controls, not DEL, C1 or bidi overrides.
      out.write(`${printable(JSON.stringify(result.output, null, 2))}\n`);
    }
  }
  if (result.status === "suspended") return EXIT.suspended;
  return result.outcome.status === "Complete" || result.outcome.status === "PartialSuccess" ? EXIT.ok : EXIT.turnFailed;
}

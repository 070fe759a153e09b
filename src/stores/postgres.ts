/**
 * Helpers the PostgreSQL stores share (the recipe blackboard and the memory
 * graph): the URL check and schema migrations under an advisory lock.
 */
import { ConclaveError } from "../errors.ts";
import { redactUrl } from "./redact.ts";

/** A "config" error unless `url` is a postgres:// or postgresql:// URL (printed without its password); `what` names the store. */
export function checkPostgresUrl(url: string, what: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    // reported below
  }
  if (protocol !== "postgres:" && protocol !== "postgresql:") {
    throw new ConclaveError(
      "config",
      `${what}: ${redactUrl(url)} is not a PostgreSQL URL (expected postgres://user@host:port/database)`,
    );
  }
}

/**
 * Runs schema statements in one transaction holding the advisory lock `lock`:
 * `CREATE … IF NOT EXISTS` is not safe when two processes run it at once.
 */
export async function migrateUnderLock(
  client: { query(text: string, values?: unknown[]): Promise<unknown> },
  lock: number,
  statements: readonly string[],
): Promise<void> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [lock]);
    for (const statement of statements) await client.query(statement);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

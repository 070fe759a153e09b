/**
 * Masking: how a configuration value is shown (`conclave config`) or quoted
 * in an error without giving a secret away.
 */
import type { MaskKind } from "./variable.ts";

/** What a secret is shown as. */
export const MASKED = "****";

/** Query parameters of a URL that may carry a secret. */
const SECRET_PARAMETER = /pass|secret|token|key|sig|auth|cred/i;

/** A value made fit to show: a secret entirely hidden, a URL's password (and secret-looking parameters) hidden. */
export function maskValue(value: string, kind: MaskKind | undefined): string {
  if (kind === "secret") return value === "" ? "" : MASKED;
  if (kind === "url") return value.split(",").map(maskUrl).join(",");
  return value;
}

/** One URL with the password of its user info and its secret-looking query parameters hidden. */
export function maskUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    // Not a URL the parser takes: still hide what follows `user:` before an `@`.
    return url.replace(/(\/\/[^/:@\s]*:)[^@/\s]*@/g, `$1${MASKED}@`);
  }
  let masked = url;
  if (parsed.password) masked = masked.replace(`:${parsed.password}@`, `:${MASKED}@`);
  for (const [name, value] of parsed.searchParams) {
    if (SECRET_PARAMETER.test(name) && value !== "") {
      masked = masked.replace(`${name}=${encodeURIComponent(value)}`, `${name}=${MASKED}`);
      masked = masked.replace(`${name}=${value}`, `${name}=${MASKED}`);
    }
  }
  return masked;
}

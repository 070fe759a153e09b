/**
 * Masking: how a configuration value is shown (`conclave config`) or quoted
 * in an error without giving a secret away.
 *
 * A URL is masked by reading its user info by hand, not by finding the URL
 * parser's `password` in the text: the parser percent-encodes a password
 * holding a space, one of ^ { } | ; = [ ] " < > @ / : \ or anything
 * non-ASCII, so its `password` is not what the text holds, and it refuses
 * some of them (a `/` ends the authority) outright.
 */
import type { MaskKind } from "./variable.ts";

/** What a secret is shown as. */
export const MASKED = "****";

/** Query parameters of a URL that may carry a secret. */
export const SECRET_PARAMETER = /pass|secret|token|key|sig|auth|cred/i;

/** A value made fit to show: a secret entirely hidden, a URL's password (and secret-looking parameters) hidden. */
export function maskValue(value: string, kind: MaskKind | undefined): string {
  if (kind === "secret") return value === "" ? "" : MASKED;
  if (kind === "url") return value.split(",").map(maskUrl).join(",");
  return value;
}

/** Where a URL's parts are in its text: `authority` starts after `//` (or at 0), `at` is its user info's `@` (-1: none). */
interface UrlLayout {
  authority: number;
  at: number;
  /** The `:` between user and password, or -1. */
  colon: number;
  /** Where the query starts (after `?`), or -1. */
  query: number;
}

/**
 * The layout of `url` as written. The user info ends at the last `@` before
 * the query: a password may hold `@`, `/` or `:` unencoded. When the URL
 * parser takes the text and finds no user info, there is none (an `@` in a
 * path is not one).
 */
function layoutOf(url: string): UrlLayout {
  const slashes = url.indexOf("//");
  const authority = slashes < 0 ? 0 : slashes + 2;
  const queryMark = url.indexOf("?", authority);
  const end = Math.min(...[queryMark, url.indexOf("#", authority), url.length].filter((at) => at >= 0));
  let at = url.lastIndexOf("@", end - 1);
  if (at < authority || !hasUserInfo(url)) at = -1;
  const colon = at < 0 ? -1 : url.indexOf(":", authority);
  return { authority, at, colon: colon >= 0 && colon < at ? colon : -1, query: queryMark < 0 ? -1 : queryMark + 1 };
}

/** False only when the URL parser takes the text and sees no user name or password in it. */
function hasUserInfo(url: string): boolean {
  try {
    const parsed = new URL(url.trim());
    return parsed.username !== "" || parsed.password !== "";
  } catch {
    return true;
  }
}

/** The password of a URL's user info as written (percent-encoded or not), or undefined when it has none. */
export function userInfoPassword(url: string): string | undefined {
  const { at, colon } = layoutOf(url);
  if (at < 0 || colon < 0 || colon + 1 === at) return undefined;
  return url.slice(colon + 1, at);
}

/** One URL with the password of its user info and its secret-looking query parameters hidden. */
export function maskUrl(url: string): string {
  const layout = layoutOf(url);
  let masked = url;
  let query = layout.query;
  if (layout.colon >= 0 && layout.colon + 1 < layout.at) {
    masked = `${url.slice(0, layout.colon + 1)}${MASKED}${url.slice(layout.at)}`;
    if (query >= 0) query -= layout.at - layout.colon - 1 - MASKED.length;
  }
  if (query < 0) return masked;
  const hash = masked.indexOf("#", query);
  const end = hash < 0 ? masked.length : hash;
  const parameters = masked
    .slice(query, end)
    .split("&")
    .map((pair) => {
      const equals = pair.indexOf("=");
      if (equals < 0 || equals === pair.length - 1) return pair;
      const name = pair.slice(0, equals);
      return SECRET_PARAMETER.test(safeDecode(name)) ? `${name}=${MASKED}` : pair;
    });
  return `${masked.slice(0, query)}${parameters.join("&")}${masked.slice(end)}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The operator's allowlist of remote A2A agents (CONCLAVE_A2A_ALLOW): which
 * URLs the runner may fetch a card from or send a message to. Pure: no
 * network, no configuration read (src/a2a/guardedFetch.ts and remoteAgents.ts use it).
 *
 * An entry is one of
 * - a host (`agents.example.com`, `127.0.0.1`, `[::1]`): any http(s) URL on it, any port;
 * - an origin (`https://agents.example.com:8443`): URLs of that scheme, host and port;
 * - a card URL (`https://agents.example.com/team/agent-card.json`): that card, and
 *   the calls and redirects its agent makes on the card's origin.
 *
 * Internal addresses (loopback, private, link-local, CGNAT…, addresses.ts) are
 * refused even for an allowed host, unless the entry names them itself: an
 * entry whose host is an IP address admits that address, and `localhost`
 * admits the loopback addresses.
 */
import { isIP } from "node:net";
import { internalRange, isLoopback } from "./addresses.ts";

/** One allowlist entry, parsed. */
export type AllowEntry =
  | { kind: "host"; host: string; text: string }
  | { kind: "origin"; host: string; origin: string; text: string }
  | { kind: "card"; host: string; origin: string; href: string; text: string };

/** What a URL is fetched for: the card named in a recipe, or anything after it (its calls, a redirect). */
export type FetchPurpose = "card" | "call";

/** A host as URL.hostname gives it, lower case, without IPv6 brackets. */
const bareHost = (hostname: string): string => hostname.toLowerCase().replace(/^\[|\]$/g, "");

const withoutFragment = (url: URL): string => url.href.replace(/#.*$/, "");

/** Parses one entry; a string is the problem with it. */
export function parseAllowEntry(text: string): AllowEntry | string {
  if (text.includes("://")) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return `'${text}' is not a URL`;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return `'${text}' is not an http(s) URL`;
    if (url.username || url.password) return `'${text}' must not carry credentials`;
    const host = bareHost(url.hostname);
    if (url.pathname === "/" && url.search === "") return { kind: "origin", host, origin: url.origin, text };
    return { kind: "card", host, origin: url.origin, href: withoutFragment(url), text };
  }
  let url: URL;
  try {
    url = new URL(`http://${text}/`);
  } catch {
    return `'${text}' is not a host name or IP address`;
  }
  if (url.port !== "" || url.pathname !== "/" || url.username)
    return `'${text}' is neither a bare host nor a URL: give a port as an origin (http://host:port)`;
  return { kind: "host", host: bareHost(url.hostname), text };
}

/** Parses a list of entries; the problems, one per bad entry. */
export function parseAllowlist(texts: readonly string[]): { entries: AllowEntry[]; problems: string[] } {
  const entries: AllowEntry[] = [];
  const problems: string[] = [];
  for (const text of texts) {
    const parsed = parseAllowEntry(text);
    if (typeof parsed === "string") problems.push(parsed);
    else entries.push(parsed);
  }
  return { entries, problems };
}

/**
 * The entry that admits fetching `url` for `purpose`, or null: the URL's
 * scheme is http(s), it carries no credentials, and an entry names its host,
 * its origin, or (for a card) the card itself (for a call, the card's origin).
 */
export function allowingEntry(entries: readonly AllowEntry[], url: URL, purpose: FetchPurpose): AllowEntry | null {
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (url.username || url.password) return null;
  const host = bareHost(url.hostname);
  for (const entry of entries) {
    if (entry.kind === "host" && entry.host === host) return entry;
    if (entry.kind === "origin" && entry.origin === url.origin) return entry;
    if (entry.kind === "card") {
      if (purpose === "card" ? entry.href === withoutFragment(url) : entry.origin === url.origin) return entry;
    }
  }
  return null;
}

/** Whether the allowlist admits the URL `text` for `purpose` (false for a text that is not a URL). */
export function allows(entries: readonly AllowEntry[], text: string, purpose: FetchPurpose): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return allowingEntry(entries, url, purpose) !== null;
}

/**
 * Why `address` (one the URL's host resolved to) may not be connected to
 * under `entry`, or null when it may: a public address always may; an
 * internal one only when the entry names that very address, or is
 * `localhost` and the address is loopback. Unspecified addresses never may.
 */
export function addressRefusal(entry: AllowEntry, address: string): string | null {
  const range = internalRange(address);
  if (range === null) return null;
  if (range === "unspecified" || range === "not an IP address") return `${address} is ${range}`;
  if (isIP(entry.host) !== 0 && sameAddress(entry.host, address)) return null;
  if (entry.host === "localhost" && isLoopback(address)) return null;
  return `${address} is ${range} (an allowlist entry must name it to admit it)`;
}

/** Whether two IP address texts are the same address (IPv6 compared in full form). */
function sameAddress(a: string, b: string): boolean {
  const full = (address: string): string => {
    const bare = bareHost(address);
    if (isIP(bare) !== 6) return bare;
    return bareHost(new URL(`http://[${bare}]/`).hostname);
  };
  return full(a) === full(b);
}

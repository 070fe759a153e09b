/**
 * The only way the runner reaches a remote A2A agent: a `fetch` that admits a
 * URL only when the operator's allowlist does (src/config/allowlist.ts), resolves its
 * host itself, refuses it when any address it resolves to is internal and
 * not named by the entry, and then connects to the address it checked (so a
 * second, different DNS answer cannot slip in). Redirects are followed by
 * hand, each hop checked the same way (GET only: any other method's redirect
 * is refused). A refusal happens before any connection is opened.
 */
import { lookup } from "node:dns/promises";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { addressRefusal, allowingEntry, type FetchPurpose } from "../config/allowlist.ts";
import { messageOf } from "../errors.ts";
import { RemoteAgentError, type RemoteAgentPolicy } from "./policy.ts";

/** Most redirects one fetch follows. */
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** What a guarded fetch needs: the policy, and the card's url its errors name. */
export interface GuardOptions {
  policy: RemoteAgentPolicy;
  /** The card's url as the recipe named it: what every error says, whatever URL was fetched. */
  cardUrl: string;
  /** Resolves a host to its addresses. Default: node:dns (the system's resolver, as connections use). */
  resolve?: (host: string) => Promise<{ address: string; family: number }[]>;
}

const systemResolve = (host: string) => lookup(host, { all: true, verbatim: true });

/**
 * A `fetch` for one remote agent (its card, then its calls): the first URL
 * it is given is fetched as the card (`purpose` "card"), any other as a call.
 * Refusals throw RemoteAgentError `not_allowed`; connection failures `unreachable`.
 */
export function guardedFetch(options: GuardOptions, purpose: FetchPurpose = "call"): typeof fetch {
  const fetchGuarded = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (input instanceof Request) throw refused(options, "a Request object was given (only URLs are guarded)");
    const method = (init.method ?? "GET").toUpperCase();
    let url = new URL(String(input));
    let hopPurpose = purpose;
    for (let hop = 0; ; hop++) {
      const target = await checkedTarget(options, url, hopPurpose);
      const response = await send(options, url, target, method, init);
      const location = response.headers.get("location");
      if (!REDIRECTS.has(response.status) || location === null) return response;
      await response.body?.cancel();
      if (method !== "GET" && method !== "HEAD")
        throw refused(options, `${method} ${url.href} answered a redirect (${response.status}): not followed`);
      if (hop >= MAX_REDIRECTS) throw unreachable(options, `more than ${MAX_REDIRECTS} redirects from ${url.href}`);
      url = new URL(location, url);
      hopPurpose = "call";
    }
  };
  return fetchGuarded as typeof fetch;
}

const refused = (options: GuardOptions, detail: string) => new RemoteAgentError(options.cardUrl, "not_allowed", detail);
const unreachable = (options: GuardOptions, detail: string) =>
  new RemoteAgentError(options.cardUrl, "unreachable", detail);

/** The address to connect to for `url`, once the allowlist and every address the host resolves to admit it. */
async function checkedTarget(
  options: GuardOptions,
  url: URL,
  purpose: FetchPurpose,
): Promise<{ address: string; family: number }> {
  const entry = allowingEntry(options.policy.allow, url, purpose);
  if (!entry) throw refused(options, `${url.href} is not on the A2A allowlist (CONCLAVE_A2A_ALLOW)`);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await (options.resolve ?? systemResolve)(host);
    } catch (error) {
      throw unreachable(options, `${host} could not be resolved: ${messageOf(error)}`);
    }
  }
  if (addresses.length === 0) throw unreachable(options, `${host} resolved to no address`);
  for (const { address } of addresses) {
    const problem = addressRefusal(entry, address);
    if (problem !== null) throw refused(options, `${url.href}: ${host} resolves to ${problem}`);
  }
  return addresses[0]!;
}

/** Connections go to the checked address, whatever the host would resolve to now. */
const pinnedLookup =
  (address: string, family: number): LookupFunction =>
  (_host, lookupOptions, callback) => {
    if (lookupOptions.all)
      (callback as (e: null, all: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };

/** One request to `url` on the checked address, answered as a fetch Response (its body streamed). */
function send(
  options: GuardOptions,
  url: URL,
  target: { address: string; family: number },
  method: string,
  init: RequestInit,
): Promise<Response> {
  const body = init.body;
  if (body != null && typeof body !== "string" && !(body instanceof Uint8Array))
    return Promise.reject(refused(options, "a request body other than text or bytes was given"));
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const requestOptions: RequestOptions = {
    method,
    hostname: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port || (url.protocol === "https:" ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    headers,
    lookup: pinnedLookup(target.address, target.family),
    signal: init.signal ?? undefined,
    agent: false,
  };
  return new Promise<Response>((resolve, reject) => {
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(requestOptions, (answer) =>
      resolve(responseOf(answer, method)),
    );
    request.on("error", (error) => {
      if (init.signal?.aborted) reject(init.signal.reason ?? error);
      else reject(unreachable(options, `${method} ${url.href} (${target.address}): ${messageOf(error)}`));
    });
    request.end(body ?? undefined);
  });
}

function responseOf(answer: IncomingMessage, method: string): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const each of value) headers.append(name, each);
    else if (value !== undefined) headers.set(name, value);
  }
  const status = answer.statusCode ?? 500;
  const empty = method === "HEAD" || status === 204 || status === 304;
  if (empty) answer.resume();
  const body = empty ? null : (Readable.toWeb(answer) as ReadableStream<Uint8Array>);
  return new Response(body, { status, statusText: answer.statusMessage ?? "", headers });
}

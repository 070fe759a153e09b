/**
 * Who may talk to `conclave serve`: anyone on this machine when it listens on
 * loopback without a token, else only a request carrying its bearer token.
 * A gateway reachable beyond loopback without a token is refused at start.
 */
import { readFileSync } from "node:fs";
import { setting } from "../config/load.ts";
import { ConfigError } from "../config/variable.ts";

/** Fewest characters a token may have: guessing one must be hopeless (e.g. `openssl rand -hex 32`). */
export const MIN_TOKEN_LENGTH = 16;

/** Whether `host` (an address or name to listen on, or a Host header's name) is this machine only. */
export function isLoopbackHost(host: string): boolean {
  const name = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return name === "localhost" || name === "::1" || /^127(?:\.\d{1,3}){3}$/.test(name);
}

/**
 * The token requests must carry: the first line of `tokenFile`, else
 * CONCLAVE_GATEWAY_TOKEN, else none. A ConfigError (exit 2, one line) for a
 * file that cannot be read or a token too short or holding spaces.
 */
export function readGatewayToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  let token: string | undefined;
  let source: string;
  if (tokenFile !== undefined) {
    source = `--token-file ${tokenFile}`;
    try {
      token = readFileSync(tokenFile, "utf8").replace(/\r?\n$/, "");
    } catch (error) {
      throw new ConfigError(`cannot read ${source}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  } else {
    source = "CONCLAVE_GATEWAY_TOKEN";
    token = setting(env, "CONCLAVE_GATEWAY_TOKEN");
    if (token === undefined) return null;
  }
  if (!/^[\x21-\x7e]+$/.test(token))
    throw new ConfigError(`the token of ${source} must be printable ASCII without spaces, on one line`);
  if (token.length < MIN_TOKEN_LENGTH)
    throw new ConfigError(
      `the token of ${source} is too short: at least ${MIN_TOKEN_LENGTH} characters (e.g. openssl rand -hex 32)`,
    );
  return token;
}

/** Refuses (ConfigError, exit 2) to listen beyond loopback without a token. */
export function checkExposure(host: string, token: string | null): void {
  if (token === null && !isLoopbackHost(host))
    throw new ConfigError(
      `conclave serve listens on ${host}, beyond loopback, only with a token: give --token-file FILE or set CONCLAVE_GATEWAY_TOKEN`,
    );
}

/**
 * Whether a request without a token may be served: its Host names this
 * machine and, from a browser, its Origin does too, so a web page cannot reach
 * a loopback gateway through DNS rebinding or a cross-site request.
 */
export function fromThisMachine(hostHeader: string | undefined, originHeader: string | undefined): boolean {
  const host = (hostHeader ?? "").replace(/:\d+$/, "");
  if (!isLoopbackHost(host)) return false;
  if (originHeader === undefined) return true;
  try {
    return isLoopbackHost(new URL(originHeader).hostname);
  } catch {
    return false;
  }
}

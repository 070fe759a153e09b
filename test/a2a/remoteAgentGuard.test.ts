/**
 * The guard under every request to a remote A2A agent (src/a2a/guardedFetch.ts),
 * against real HTTP servers on free ports of 127.0.0.1. Internal targets are
 * refused before any connection: a tripwire on net.Socket records every
 * connection this process opens (and stops any that is not to loopback, so a
 * broken guard still sends nothing off the machine), and the servers count theirs.
 */
import { createServer, type Server } from "node:http";
import { isIP, Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openA2aAgent } from "../../src/a2a/a2aClient.ts";
import { guardedFetch } from "../../src/a2a/guardedFetch.ts";
import { RemoteAgentError, remoteAgentPolicyOf } from "../../src/a2a/policy.ts";
import { remoteAgents } from "../../src/a2a/remoteAgents.ts";
import { addressRefusal, parseAllowEntry } from "../../src/config/allowlist.ts";
import { freePort } from "../../src/nats/server.ts";
import type { Logger } from "../../src/telemetry/log.ts";

/** Hosts or addresses this process tried to connect to, in order. */
const connections: string[] = [];
const originalConnect = Socket.prototype.connect;

function tripwire(this: Socket, ...args: unknown[]): Socket {
  // net.createConnection passes its arguments normalized, as one array [options, callback].
  const [first, second] = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  const host =
    typeof first === "object" && first !== null
      ? String((first as { host?: string }).host ?? "localhost")
      : typeof second === "string"
        ? second
        : "localhost";
  connections.push(host);
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare !== "localhost" && !bare.startsWith("127.") && bare !== "::1")
    throw new Error(`test tripwire: a connection to ${host} was attempted`);
  return (originalConnect as (...a: unknown[]) => Socket).apply(this, args);
}

interface Served {
  server: Server;
  origin: string;
  /** Connections the server accepted. */
  accepted: number;
  /** Paths it was asked for. */
  paths: string[];
}

/** A loopback server answering `routes` (path → status, headers, body). */
async function serve(routes: Record<string, (origin: string) => [number, Record<string, string>, string]>) {
  const port = await freePort();
  const served: Served = { server: createServer(), origin: `http://127.0.0.1:${port}`, accepted: 0, paths: [] };
  served.server.on("connection", () => served.accepted++);
  served.server.on("request", (request, response) => {
    served.paths.push(`${request.method} ${request.url}`);
    const route = routes[request.url ?? ""];
    const [status, headers, body] = route ? route(served.origin) : [404, {}, "no"];
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(body);
  });
  await new Promise<void>((resolve) => served.server.listen(port, "127.0.0.1", resolve));
  return served;
}

const card = (interfaceUrl: string) =>
  JSON.stringify({
    name: "Echo",
    description: "echoes",
    version: "1.0.0",
    supportedInterfaces: [{ url: interfaceUrl, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "echo", description: "echoes", tags: [] }],
  });

let agent: Served;
let other: Served;

beforeAll(async () => {
  Socket.prototype.connect = tripwire as typeof Socket.prototype.connect;
  other = await serve({ "/.well-known/agent-card.json": (origin) => [200, {}, card(`${origin}/a2a`)] });
  agent = await serve({
    "/.well-known/agent-card.json": (origin) => [200, {}, card(`${origin}/a2a`)],
    "/moved": () => [302, { location: "/.well-known/agent-card.json" }, ""],
    "/to-metadata": () => [302, { location: "http://169.254.169.254/latest/meta-data/" }, ""],
    "/to-other-port": () => [302, { location: `${other.origin}/.well-known/agent-card.json` }, ""],
    "/card-elsewhere.json": () => [200, {}, card(`${other.origin}/a2a`)],
    "/a2a": () => [500, {}, "internal detail: db at 10.1.2.3 is down"],
  });
});
afterAll(async () => {
  Socket.prototype.connect = originalConnect;
  await Promise.all([agent, other].map(({ server }) => new Promise((resolve) => server.close(resolve))));
});
afterEach(() => {
  connections.length = 0;
});

/** The error `promise` rejects with, checked to be a RemoteAgentError. */
async function refusal(promise: Promise<unknown>): Promise<RemoteAgentError> {
  const error = await promise.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RemoteAgentError);
  return error as RemoteAgentError;
}

const INTERNAL = [
  ["127.0.0.1", "loopback"],
  ["10.0.0.1", "private"],
  ["172.16.5.4", "private"],
  ["192.168.1.1", "private"],
  ["169.254.169.254", "link-local"],
  ["100.64.0.1", "carrier-grade NAT"],
  ["0.0.0.0", "unspecified"],
  ["::1", "loopback"],
  ["fd00::1", "unique local (private)"],
  ["fe80::1", "link-local"],
  ["::", "unspecified"],
  ["::ffff:169.254.169.254", "link-local"],
  ["::ffff:7f00:1", "loopback"],
] as const;

describe("the remote agent guard", () => {
  it("refuses every remote agent by default, before any lookup or connection", async () => {
    const policy = remoteAgentPolicyOf([]);
    const resolved: string[] = [];
    const fetchCard = guardedFetch(
      {
        policy,
        cardUrl: "x",
        resolve: async (host) => {
          resolved.push(host);
          return [];
        },
      },
      "card",
    );
    for (const url of [`${agent.origin}/.well-known/agent-card.json`, "https://agents.example.com/card.json"]) {
      const error = await refusal(fetchCard(url));
      expect(error).toMatchObject({
        code: "forbidden",
        failure: "not_allowed",
        message: "A2A agent x: remote agent not allowed",
      });
    }
    expect(resolved).toEqual([]);
    expect(connections).toEqual([]);
    expect(agent.accepted).toBe(0);
  });

  it.each(INTERNAL)("refuses a URL of the literal address %s unless an entry names it", async (address) => {
    const host = address.includes(":") ? `[${address}]` : address;
    const url = `http://${host}/.well-known/agent-card.json`;
    const error = await refusal(
      guardedFetch({ policy: remoteAgentPolicyOf(["agents.example.com"]), cardUrl: url })(url),
    );
    expect(error.message).toBe(`A2A agent ${url}: remote agent not allowed`);
    expect(connections).toEqual([]);
  });

  it.each(INTERNAL)(
    "refuses a host resolving to %s (%s), and says the range only in its detail",
    async (address, range) => {
      const url = "http://agents.example.com/.well-known/agent-card.json";
      const resolve = async () => [{ address, family: isIP(address) }];
      const fetchCard = guardedFetch({ policy: remoteAgentPolicyOf(["agents.example.com"]), cardUrl: url, resolve });
      const error = await refusal(fetchCard(url));
      expect(error.message).toBe(`A2A agent ${url}: remote agent not allowed`);
      expect(error.message).not.toContain(address);
      expect(error.detail).toContain(range);
      expect(connections).toEqual([]);
    },
  );

  it("refuses a host when any one of its addresses is internal", async () => {
    const url = "https://agents.example.com/card.json";
    const resolve = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ];
    const error = await refusal(
      guardedFetch({ policy: remoteAgentPolicyOf(["agents.example.com"]), cardUrl: url, resolve })(url),
    );
    expect(error.detail).toContain("10.0.0.7 is private");
    expect(connections).toEqual([]);
  });

  it("admits loopback only where an entry names it, and never an unspecified address", () => {
    const entry = (text: string) => {
      const parsed = parseAllowEntry(text);
      if (typeof parsed === "string") throw new Error(parsed);
      return parsed;
    };
    expect(addressRefusal(entry("127.0.0.1"), "127.0.0.1")).toBeNull();
    expect(addressRefusal(entry("http://[::1]:8080"), "::1")).toBeNull();
    expect(addressRefusal(entry("localhost"), "127.0.0.1")).toBeNull();
    expect(addressRefusal(entry("localhost"), "10.0.0.1")).toContain("private");
    expect(addressRefusal(entry("127.0.0.1"), "127.0.0.2")).toContain("loopback");
    expect(addressRefusal(entry("0.0.0.0"), "0.0.0.0")).toContain("unspecified");
    expect(addressRefusal(entry("agents.example.com"), "93.184.216.34")).toBeNull();
    expect(parseAllowEntry("127.0.0.1:8080")).toMatch(/origin/);
    expect(parseAllowEntry("ftp://agents.example.com")).toMatch(/http/);
  });

  it("resolves a host once and connects to the address it checked", async () => {
    const lookups: string[] = [];
    const port = new URL(agent.origin).port;
    const url = `http://localhost:${port}/.well-known/agent-card.json`;
    const resolve = async (host: string) => {
      lookups.push(host);
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const response = await guardedFetch(
      { policy: remoteAgentPolicyOf(["localhost"]), cardUrl: url, resolve },
      "card",
    )(url);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ name: "Echo" });
    expect(lookups).toEqual(["localhost"]);
  });

  it("follows a redirect the allowlist admits, and refuses one to 169.254.169.254 or to another port", async () => {
    const policy = remoteAgentPolicyOf([agent.origin]);
    const moved = await guardedFetch({ policy, cardUrl: "moved" }, "card")(`${agent.origin}/moved`);
    expect(await moved.json()).toMatchObject({ name: "Echo" });
    connections.length = 0;

    const toMetadata = await refusal(guardedFetch({ policy, cardUrl: "m" }, "card")(`${agent.origin}/to-metadata`));
    expect(toMetadata.message).toBe("A2A agent m: remote agent not allowed");
    expect(toMetadata.detail).toContain("169.254.169.254");
    expect(connections).toEqual(["127.0.0.1"]);

    const before = other.accepted;
    const toOther = await refusal(guardedFetch({ policy, cardUrl: "o" }, "card")(`${agent.origin}/to-other-port`));
    expect(toOther.failure).toBe("not_allowed");
    expect(other.accepted).toBe(before);
  });

  it("refuses a card whose interface url is not on the allowlist, before anything is sent to it", async () => {
    const cardUrl = `${agent.origin}/card-elsewhere.json`;
    const error = await refusal(openA2aAgent(cardUrl, AbortSignal.timeout(10_000), remoteAgentPolicyOf([cardUrl])));
    expect(error.message).toBe(`A2A agent ${cardUrl}: remote agent not allowed`);
    expect(error.detail).toContain(`${other.origin}/a2a`);
    expect(other.accepted).toBe(0);
  });

  it("a card url entry admits that card and its agent's calls on its origin, not another card there", async () => {
    const cardUrl = `${agent.origin}/.well-known/agent-card.json`;
    const policy = remoteAgentPolicyOf([cardUrl]);
    const opened = await openA2aAgent(cardUrl, AbortSignal.timeout(10_000), policy);
    expect(opened.card.name).toBe("Echo");
    const sibling = `${agent.origin}/card-elsewhere.json`;
    await refusal(openA2aAgent(sibling, AbortSignal.timeout(10_000), policy));
  });

  it("an unreachable agent is one line that says nothing of what answered", async () => {
    const dead = `http://127.0.0.1:${await freePort()}/.well-known/agent-card.json`;
    const error = await refusal(openA2aAgent(dead, AbortSignal.timeout(10_000), remoteAgentPolicyOf(["127.0.0.1"])));
    expect(error).toMatchObject({ code: "agent_failed", message: `A2A agent ${dead}: remote agent unreachable` });
    expect(error.detail).toContain("ECONNREFUSED");
  });

  it("a failed call says only that; what the agent answered goes to the runner's log", async () => {
    const lines: string[] = [];
    const log: Logger = {
      debug: () => {},
      info: () => {},
      warn: (message) => lines.push(message),
      error: (message) => lines.push(message),
      child: () => log,
    };
    const cardUrl = `${agent.origin}/.well-known/agent-card.json`;
    const agents = remoteAgents(
      { "remote.echo": { card_url: cardUrl } },
      { policy: remoteAgentPolicyOf([cardUrl]), log },
    );
    const error = await refusal(agents.ask("remote.echo", "hello", AbortSignal.timeout(10_000)));
    expect(error).toMatchObject({ code: "agent_failed", message: `A2A agent ${cardUrl}: remote agent call failed` });
    expect(lines).toEqual([expect.stringContaining("internal detail: db at 10.1.2.3 is down")]);
    expect(agent.paths).toContain("POST /a2a");
  });
});

/**
 * `startGateway`, the gateway started from the library (issue 35): MCP's
 * `converse` runs a turn against a real stack (nats-server, a runner and a
 * worker in this process), AG-UI and `/healthz` answer, and a host beyond
 * loopback without a token is refused before anything listens.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { type GatewayHandle, startGateway } from "../../src/index.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const nats = useNatsServer();
useInProcessStack(nats);

let client: ConclaveClient;
let gateway: GatewayHandle;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  gateway = await startGateway({ client, port: 0 });
});

afterAll(async () => {
  await gateway?.close();
});

describe("startGateway", () => {
  it("listens on loopback at a free port, with its endpoints", async () => {
    expect(gateway.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gateway.mcpUrl).toBe(`${gateway.url}/mcp`);
    expect(gateway.aguiUrl).toBe(`${gateway.url}/ag-ui`);
    const health = await fetch(`${gateway.url}/healthz`);
    expect(await health.json()).toEqual({ status: "ok", tools: ["converse"] });
  });

  it("runs a turn through MCP's converse and returns the reply", async () => {
    const mcp = new Client({ name: "start-gateway-test", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl)));
    try {
      const result = await mcp.callTool({ name: "converse", arguments: { text: "I'm stressed about my deadline" } });
      expect(result.isError).toBeFalsy();
      const answer = result.structuredContent as { session_id: string; turn_id: number; reply: string };
      expect(answer.turn_id).toBe(1);
      expect(answer.reply.length).toBeGreaterThan(0);
    } finally {
      await mcp.close();
    }
  }, 60_000);

  it("refuses a host beyond loopback without a token, in one line", async () => {
    await expect(startGateway({ client, host: "0.0.0.0", port: 0 })).rejects.toThrow(
      /beyond loopback, only with a token/,
    );
  });
});

import { readFileSync } from "node:fs";
import { credsAuthenticator } from "@nats-io/nats-core";
import { connect as natsConnect } from "@nats-io/transport-node";
import { type ConclaveClient, connect } from "../../client/client.ts";
import { setting } from "../../config/load.ts";
import { messageOf } from "../../errors.ts";
import { checkExposure, readGatewayToken } from "../../gateway/access.ts";
import { loadMcpGateway } from "../../gateway/open.ts";
import { GatewayClients, type Principal, Principals } from "../../gateway/principals.ts";
import {
  DEFAULT_GATEWAY_PORT,
  DEFAULT_GATEWAY_TIMEOUT_MS,
  gatewayTools,
  openHttpGateway,
} from "../../gateway/startGateway.ts";
import { checkFeature, fallbackLine, optionalFeature } from "../../optionalFeatures.ts";
import { createLogger } from "../../telemetry/log.ts";
import { packageVersion } from "../../version.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { defineCommand } from "../command.ts";
import { logStrayRejections } from "../strayRejections.ts";

const help = `conclave serve: a gateway for callers that do not speak NATS: MCP (Model Context Protocol), A2A and AG-UI

Usage: conclave serve [--recipes DIR] [--host H] [--port N] [--token-file F | --principals F] [options]
       conclave serve --stdio [--recipes DIR] [options]

  --recipes DIR     offer each recipe file of DIR (.yaml, .yml, .json) as a tool, named from the
                    recipe's name, taking its interface.inputs as arguments   [none]
  --host H          the address to listen on   [127.0.0.1]
  --port N          the port   [${DEFAULT_GATEWAY_PORT}; 0 picks a free port]
  --token-file F    every request must carry Authorization: Bearer <the file's first line>
                    (or set CONCLAVE_GATEWAY_TOKEN); required to listen beyond loopback
  --principals F    a JSON or YAML file giving each caller its own token and principal: a tenant
                    (reached with its own NATS login) or a named client (its sessions under its
                    namespace); callers see only their own sessions, tasks and approvals
                    (or set CONCLAVE_GATEWAY_PRINCIPALS; docs/gateway.md#principals)
  --stdio           speak MCP on stdin/stdout instead (for a client that starts the gateway itself)
  --timeout MS      patience for one call (a turn, or a run until it completes or suspends)  [${DEFAULT_GATEWAY_TIMEOUT_MS}]

MCP over Streamable HTTP is served on /mcp (and GET /healthz). Tools: converse (one turn in
a session: session_id optional, text) and one per recipe. A call's events come as progress
notifications when the client asks for progress; cancelling a call cancels its turn or run;
a run waiting at a human node or for an approval is a result saying so, with the
conclave resume/approve command that answers it. A2A (Agent2Agent, with
@a2a-js/sdk installed): the agent card on /.well-known/agent-card.json, JSON-RPC on /a2a,
HTTP+JSON on /a2a/rest; a message is a converse turn (its contextId the session) or, with
metadata {"skill": "<recipe>"}, a run; a run waiting for a person is an input-required task,
answered by the next message in it. AG-UI (with @ag-ui/core and @ag-ui/encoder installed):
POST /ag-ui takes a RunAgentInput and streams the turn as AG-UI events, for web frontends
(CopilotKit and the like); its thread is the session. The banner says when A2A or AG-UI is
off, and conclave doctor which package adds it. See docs/gateway.md.

It is a client of Conclave (the client role, or a tenant's login): start several side by
side if you like. Runs until interrupted, or with --stdio until stdin closes.`;

const FLAGS = {
  recipes: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  "token-file": { type: "string" },
  principals: { type: "string" },
  stdio: { type: "boolean" },
  timeout: { type: "string" },
} as const;

export default defineCommand({
  help,
  flags: FLAGS,
  role: "client",
  longLived: true,
  async run({ values, bus, connectionOptions }) {
    const timeoutMs = Number(values.timeout ?? DEFAULT_GATEWAY_TIMEOUT_MS);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new UsageError("--timeout must be a positive number of milliseconds");
    if (values.stdio)
      for (const flag of ["host", "port", "token-file", "principals"] as const)
        if (values[flag] !== undefined) throw new UsageError(`--${flag} is for HTTP: not with --stdio`);
    const host = values.host ?? "127.0.0.1";
    const port = portArg(values.port, DEFAULT_GATEWAY_PORT);
    if (port === null) throw new UsageError("--port must be a whole number from 0 to 65535");
    // Checked before anything connects: a gateway open to the network without a token never starts.
    const principals = values.stdio ? Principals.sole(null) : principalsOf(values);
    if (!values.stdio) checkExposure(host, principals.size > 0 ? "given" : null);
    const tools = gatewayTools(values.recipes, timeoutMs);
    // Loaded before anything connects: without the MCP SDK, the one line that says what to install.
    const gateway = await loadMcpGateway();
    const log = createLogger("gateway");
    logStrayRejections(log);
    const client = await connect({ nc: await bus() });
    const servers = connectionOptions().servers;
    const clients = new GatewayClients(client, (principal) => tenantClient(servers, principal));
    if (values.stdio) {
      const onError = (error: unknown) => log.debug(`gateway: ${messageOf(error)}`);
      const stop = new AbortController();
      void untilInterrupted().then(() => stop.abort());
      announceReady();
      log.info(`serving MCP on stdio: tools ${tools.map((tool) => tool.name).join(", ")}`);
      await gateway.serveMcpStdio({ clients, tools, version: packageVersion(), onError, signal: stop.signal });
      return 0;
    }
    const http = await openHttpGateway({ client, clients, principals, tools, host, port, timeoutMs, log });
    const access =
      principals.size > 1 ? ` (${principals.size} principals)` : principals.size ? " (bearer token required)" : "";
    console.log(`Conclave gateway: MCP on ${http.mcpUrl}${access}`);
    // Without @a2a-js/sdk no card is served: said here too, as for AG-UI below.
    console.log(
      `Conclave gateway: ${http.a2aCardUrl ? `A2A agent card on ${http.a2aCardUrl}` : fallbackLine(await checkFeature(optionalFeature("a2a")))}`,
    );
    // Without its packages /ag-ui answers 501: said here, in one line, rather than left for a caller to find.
    const agui = await checkFeature(optionalFeature("agui"));
    console.log(`Conclave gateway: ${agui.available ? `AG-UI on ${http.aguiUrl}` : fallbackLine(agui)}`);
    log.info(`tools: ${tools.map((tool) => tool.name).join(", ")}`);
    // What conclave dev prints: the endpoints this gateway serves (null: off for want of a package).
    announceReady({ mcpUrl: http.mcpUrl, a2aCardUrl: http.a2aCardUrl, aguiUrl: agui.available ? http.aguiUrl : null });
    await untilInterrupted();
    await http.close();
    await clients.close();
    return 0;
  },
});

/** Who may call: a principals file, else the one token (or none: this machine only). */
function principalsOf(values: { "token-file"?: string; principals?: string }): Principals {
  const file = values.principals ?? setting(process.env, "CONCLAVE_GATEWAY_PRINCIPALS");
  if (file === undefined) return Principals.sole(readGatewayToken(values["token-file"]));
  if (values["token-file"] !== undefined)
    throw new UsageError("give --principals or --token-file, not both: the principals file holds every token");
  return Principals.fromFile(file);
}

/** A tenant principal's own client: logged in to NATS as the tenant, so it reaches the tenant's sessions only. */
async function tenantClient(servers: readonly string[], principal: Principal): Promise<ConclaveClient> {
  const { user, password, credsFile } = principal.tenant!.nats;
  const nc = await natsConnect({
    servers: [...servers],
    name: `conclave-gateway:${principal.name}`,
    ...(credsFile
      ? { authenticator: credsAuthenticator(new TextEncoder().encode(readFileSync(credsFile, "utf8"))) }
      : { user, pass: password }),
    maxReconnectAttempts: -1,
  });
  return connect({ nc });
}

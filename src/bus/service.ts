/**
 * A NATS service as the NATS micro-services protocol defines it (what
 * `nats micro ls` and every NATS library's services client discover), on
 * nats-core subscriptions. It replaces @nats-io/services, whose last release
 * (3.0.0-25) pins an older @nats-io/nats-core installed beside ours; what a
 * peer observes is what that library did:
 * - each endpoint subscribes to its subject in the queue group `q`
 *   ({@link SERVICE_QUEUE}): the instances of a service share its requests;
 * - an error reply carries the `Nats-Service-Error` and
 *   `Nats-Service-Error-Code` headers; a handler that throws gets the
 *   requester an empty error reply with code 500;
 * - discovery: `$SRV.PING|INFO|STATS`, `$SRV.<verb>.<name>` and
 *   `$SRV.<verb>.<name>.<id>` are answered, without a queue group, with the
 *   protocol's JSON (`io.nats.micro.v1.{ping,info,stats}_response`);
 * - a subscription that fails (e.g. refused by the server) stops the service.
 */
import {
  Empty,
  headers,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  nuid,
  type Subscription,
} from "@nats-io/nats-core";
import { messageOf, singleLine } from "../errors.ts";
import { isInboxReply, type ServingRole } from "./replies.ts";
import { FORMAT_HEADERS, withFormatHeader } from "./wire.ts";

/** Header of an error reply: a one-line description. */
export const ServiceErrorHeader = "Nats-Service-Error";
/** Header of an error reply: an HTTP-like status. */
export const ServiceErrorCodeHeader = "Nats-Service-Error-Code";
/** The queue group of every endpoint (the protocol's default). */
export const SERVICE_QUEUE = "q";

const DISCOVERY_PREFIX = "$SRV";
const RESPONSE_TYPES = {
  PING: "io.nats.micro.v1.ping_response",
  INFO: "io.nats.micro.v1.info_response",
  STATS: "io.nats.micro.v1.stats_response",
} as const;
type DiscoveryVerb = keyof typeof RESPONSE_TYPES;

/** A request to an endpoint. */
export interface ServiceMsg {
  readonly subject: string;
  /** The requester's reply subject; "" when there is none. */
  readonly reply: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  /** Answers on the reply subject; false when there is none. */
  respond(data?: Uint8Array | string): boolean;
  /** Answers with the error headers (`code` an HTTP-like status) and `data` as the body. */
  respondError(code: number, description: string, data?: Uint8Array): boolean;
}

/** What a service says of itself in discovery. */
export interface ServiceConfig {
  /** Letters, digits, `_` and `-`. */
  name: string;
  /** A semantic version. */
  version: string;
  description?: string;
  metadata?: Record<string, string>;
}

/** One endpoint: a subject and the handler of its requests. */
export interface EndpointOptions {
  subject: string;
  /** Must not be async: start the work detached, and answer from it. */
  handler: (msg: ServiceMsg) => void;
  metadata?: Record<string, string>;
}

/** Where endpoints are added. */
export interface ServiceGroup {
  /** Subscribes `options.subject` in the queue group `q`; `name` (letters, digits, `_`, `-`) is shown by discovery. */
  addEndpoint(name: string, options: EndpointOptions): void;
}

/** A running service. */
export interface Service extends ServiceGroup {
  readonly name: string;
  /** Unique to this instance: discovery can address it alone (`$SRV.PING.<name>.<id>`). */
  readonly id: string;
  /** Drains every subscription (endpoints and discovery). */
  stop(): Promise<void>;
}

/**
 * Starts a service on `nc`. Its discovery handlers answer only requests
 * whose reply is an inbox the process of role `servedBy` answers on (see
 * isInboxReply): whoever may send a `$SRV.PING` — the operator, or anyone
 * with a wider role — cannot have the runner or a worker write its answer
 * into a data subject. (nats-server's `allow_responses` would not stop it: a
 * reply to a request received is exactly what it allows.) Endpoints are
 * guarded by their own handlers.
 */
export function startService(nc: NatsConnection, servedBy: ServingRole, config: ServiceConfig): Service {
  return new NatsService(nc, servedBy, config);
}

interface EndpointStats {
  name: string;
  subject: string;
  metadata: Record<string, string> | undefined;
  num_requests: number;
  /** Nanoseconds, as the protocol counts. */
  processing_time: number;
  num_errors: number;
  last_error: string | undefined;
}

class NatsService implements Service {
  readonly id = nuid.next();
  readonly name: string;
  readonly #nc: NatsConnection;
  readonly #config: ServiceConfig;
  readonly #metadata: Readonly<Record<string, string>>;
  readonly #started = new Date().toISOString();
  readonly #endpoints: EndpointStats[] = [];
  readonly #subscriptions: Subscription[] = [];
  #stopping: Promise<void> | null = null;

  constructor(nc: NatsConnection, servedBy: ServingRole, config: ServiceConfig) {
    checkName("service", config.name);
    if (!SEMVER.test(config.version))
      throw new Error(`service version ${JSON.stringify(config.version)} is not semver`);
    this.#nc = nc;
    this.#config = config;
    this.name = config.name;
    this.#metadata = Object.freeze({ ...config.metadata });
    const ping = JSON.stringify({ ...this.#identity("PING"), metadata: this.#metadata });
    const answers: Record<DiscoveryVerb, () => string> = {
      PING: () => ping,
      INFO: () => JSON.stringify(this.#info()),
      STATS: () => JSON.stringify(this.#stats()),
    };
    for (const verb of Object.keys(answers) as DiscoveryVerb[]) {
      for (const subject of [
        `${DISCOVERY_PREFIX}.${verb}`,
        `${DISCOVERY_PREFIX}.${verb}.${this.name}`,
        `${DISCOVERY_PREFIX}.${verb}.${this.name}.${this.id}`,
      ]) {
        this.#subscribe(subject, undefined, (msg) => {
          if (isInboxReply(msg.reply, servedBy)) msg.respond(answers[verb]());
        });
      }
    }
  }

  addEndpoint(name: string, options: EndpointOptions): void {
    checkName("endpoint", name);
    checkSubject(options.subject);
    const stats: EndpointStats = {
      name,
      subject: options.subject,
      metadata: options.metadata,
      num_requests: 0,
      processing_time: 0,
      num_errors: 0,
      last_error: undefined,
    };
    this.#endpoints.push(stats);
    this.#subscribe(options.subject, SERVICE_QUEUE, (msg) => {
      const start = Date.now();
      try {
        options.handler(new NatsServiceMsg(msg));
      } catch (error) {
        stats.num_errors++;
        stats.last_error = messageOf(error);
        new NatsServiceMsg(msg).respondError(500, singleLine(stats.last_error));
      } finally {
        stats.num_requests++;
        stats.processing_time += (Date.now() - start) * 1_000_000;
      }
    });
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#nc.isClosed()
      ? Promise.resolve()
      : // async: a drain that throws (the connection is draining already) is a rejection allSettled absorbs.
        Promise.allSettled(this.#subscriptions.map(async (subscription) => subscription.drain())).then(() => {});
    return this.#stopping;
  }

  #subscribe(subject: string, queue: string | undefined, onMsg: (msg: Msg) => void): void {
    const subscription = this.#nc.subscribe(subject, {
      ...(queue ? { queue } : {}),
      callback: (error, msg) => {
        if (error) void this.stop();
        else onMsg(msg);
      },
    });
    // A subscription that ends while the service runs (refused, unsubscribed) ends the service.
    subscription.closed.then(
      () => this.#stopping ?? this.stop(),
      () => this.#stopping ?? this.stop(),
    );
    this.#subscriptions.push(subscription);
  }

  #identity(verb: DiscoveryVerb) {
    return { type: RESPONSE_TYPES[verb], name: this.name, id: this.id, version: this.#config.version };
  }

  #info() {
    return {
      ...this.#identity("INFO"),
      description: this.#config.description ?? "",
      metadata: this.#metadata,
      endpoints: this.#endpoints.map(({ subject, metadata, name }) => ({
        subject,
        metadata,
        name,
        queue_group: SERVICE_QUEUE,
      })),
    };
  }

  #stats() {
    return {
      ...this.#identity("STATS"),
      started: this.#started,
      metadata: this.#metadata,
      endpoints: this.#endpoints.map((stats) => ({
        name: stats.name,
        subject: stats.subject,
        average_processing_time: stats.num_requests > 0 ? Math.round(stats.processing_time / stats.num_requests) : 0,
        num_errors: stats.num_errors,
        num_requests: stats.num_requests,
        processing_time: stats.processing_time,
        last_error: stats.last_error,
        queue_group: SERVICE_QUEUE,
      })),
    };
  }
}

/** A request as an endpoint's handler sees it. */
class NatsServiceMsg implements ServiceMsg {
  constructor(private readonly msg: Msg) {}
  get subject(): string {
    return this.msg.subject;
  }
  get reply(): string {
    return this.msg.reply ?? "";
  }
  get data(): Uint8Array {
    return this.msg.data;
  }
  get headers(): MsgHdrs | undefined {
    return this.msg.headers;
  }
  respond(data?: Uint8Array | string): boolean {
    return this.msg.respond(data, { headers: FORMAT_HEADERS });
  }
  respondError(code: number, description: string, data: Uint8Array = Empty): boolean {
    const errorHeaders = headers();
    errorHeaders.set(ServiceErrorCodeHeader, `${code}`);
    errorHeaders.set(ServiceErrorHeader, description);
    return this.msg.respond(data, { headers: withFormatHeader(errorHeaders) });
  }
}

const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

function checkName(what: string, name: string): void {
  if (!/^[-\w]+$/.test(name)) throw new Error(`invalid ${what} name ${JSON.stringify(name)}: letters, digits, _ and -`);
}

function checkSubject(subject: string): void {
  const tokens = subject.split(".");
  if (/\s/.test(subject) || tokens.some((token, index) => token === "" || (token === ">" && index < tokens.length - 1)))
    throw new Error(`invalid endpoint subject ${JSON.stringify(subject)}`);
}

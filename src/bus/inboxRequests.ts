import type { PubAck } from "@nats-io/jetstream";
import { JetStreamApiError, PubHeaders } from "@nats-io/jetstream";
import {
  headers as createHeaders,
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  NoRespondersError,
  PermissionViolationError,
  type Subscription,
  TimeoutError,
} from "@nats-io/nats-core";

/** A request waiting for its reply. */
interface Pending {
  resolve: (msg: Msg) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
  subject: string;
}

/** How one request is sent. */
export interface InboxRequestOptions {
  /** How long to wait for the reply, ms. */
  timeoutMs: number;
  headers?: MsgHdrs;
}

/**
 * Request/reply over one wildcard inbox subscription of our own, for the hot
 * path's requests (the event log's appends). nats-core's `request` builds a
 * `RequestError("cancelled")` — an Error with its stack — after every request
 * that succeeds (its RequestOne cancels itself once resolved): about a tenth of
 * a runner's CPU under load. Here a reply resolves its request and nothing else
 * is made. A timeout rejects with nats-core's TimeoutError and a reply with the
 * no-responders status with its NoRespondersError, as `nc.request` does.
 *
 * A publish the server refuses (a permissions violation, reported on the
 * connection's status) fails the oldest request waiting on that subject with
 * nats-core's PermissionViolationError, as `nc.request` matches it; a refused
 * subscription to the inbox fails every request waiting.
 */
export class InboxRequests {
  readonly #pending = new Map<string, Pending>();
  readonly #inbox: string;
  #sub: Subscription | null = null;
  #watching = false;
  #next = 0;

  private constructor(private readonly nc: NatsConnection) {
    this.#inbox = createInbox(inboxPrefixOf(nc));
  }

  /** The requester of a connection (one inbox subscription per connection). */
  static of(nc: NatsConnection): InboxRequests {
    let requests = perConnection.get(nc);
    if (!requests) {
      requests = new InboxRequests(nc);
      perConnection.set(nc, requests);
    }
    return requests;
  }

  request(subject: string, data: Uint8Array, options: InboxRequestOptions): Promise<Msg> {
    this.#subscribe();
    const token = (this.#next++).toString(36);
    return new Promise<Msg>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.#pending.delete(token)) reject(new TimeoutError());
      }, options.timeoutMs);
      this.#pending.set(token, { resolve, reject, timer, subject });
      try {
        this.nc.publish(subject, data, {
          reply: `${this.#inbox}.${token}`,
          ...(options.headers ? { headers: options.headers } : {}),
        });
      } catch (error) {
        clearTimeout(timer);
        this.#pending.delete(token);
        reject(error as Error);
      }
    });
  }

  /** Fails the request a refused publish was for (the oldest on its subject), or all when the inbox was refused. */
  #refused(error: PermissionViolationError): void {
    const inboxRefused = error.operation === "subscription" && error.subject === `${this.#inbox}.*`;
    for (const [token, pending] of this.#pending) {
      if (!inboxRefused && (error.operation !== "publish" || pending.subject !== error.subject)) continue;
      this.#pending.delete(token);
      clearTimeout(pending.timer);
      pending.reject(error);
      if (!inboxRefused) return;
    }
  }

  #watchRefusals(): void {
    void (async () => {
      for await (const status of this.nc.status())
        if (status.type === "error" && status.error instanceof PermissionViolationError) this.#refused(status.error);
    })().catch(() => {}); // the connection closed: nothing more to watch
  }

  #subscribe(): void {
    if (this.#sub) return;
    if (!this.#watching) {
      this.#watching = true;
      this.#watchRefusals();
    }
    const prefixLength = this.#inbox.length + 1;
    this.#sub = this.nc.subscribe(`${this.#inbox}.*`, {
      callback: (error, msg) => {
        if (error) return;
        const token = msg.subject.slice(prefixLength);
        const pending = this.#pending.get(token);
        if (!pending) return; // timed out already
        this.#pending.delete(token);
        clearTimeout(pending.timer);
        if (msg.headers?.code === 503) pending.reject(new NoRespondersError(pending.subject));
        else pending.resolve(msg);
      },
    });
    // The connection closed: nothing will answer what is still waiting.
    void this.#sub.closed.then(() => {
      this.#sub = null;
      for (const [token, pending] of this.#pending) {
        this.#pending.delete(token);
        clearTimeout(pending.timer);
        pending.reject(new TimeoutError());
      }
    });
  }
}

const perConnection = new WeakMap<NatsConnection, InboxRequests>();

/** The connection's inbox prefix (a role's own, e.g. `_INBOX_runner`, that its permissions allow). */
function inboxPrefixOf(nc: NatsConnection): string {
  const options = (nc as { options?: { inboxPrefix?: string } }).options;
  return options?.inboxPrefix || "_INBOX";
}

/** What a JetStream publish expects (headers the server checks). */
export interface JetStreamPublishOptions {
  /** Deduplication id (`Nats-Msg-Id`). */
  msgID?: string;
  /** The subject's last sequence must be this (`Nats-Expected-Last-Subject-Sequence`). */
  expectLastSubjectSequence?: number;
  /** More headers the stored message carries. */
  headers?: Readonly<Record<string, string>>;
  timeoutMs: number;
}

const decoder = new TextDecoder();

/**
 * Publishes to a stream's subject and waits for its PubAck, as `js.publish`
 * does, over {@link InboxRequests}. A refusal by the stream is nats' own
 * JetStreamApiError (its `code`: e.g. StreamWrongLastSequence).
 */
export async function jetStreamPublish(
  requests: InboxRequests,
  subject: string,
  data: Uint8Array,
  options: JetStreamPublishOptions,
): Promise<PubAck> {
  // Headers only when there is something to say: a plain publish is stored the same.
  let headers: MsgHdrs | undefined;
  if (options.msgID !== undefined) {
    headers = createHeaders();
    headers.set(PubHeaders.MsgIdHdr, options.msgID);
  }
  if (options.expectLastSubjectSequence !== undefined) {
    headers ??= createHeaders();
    headers.set(PubHeaders.ExpectedLastSubjectSequenceHdr, `${options.expectLastSubjectSequence}`);
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    headers ??= createHeaders();
    headers.set(name, value);
  }
  const reply = await requests.request(subject, data, {
    timeoutMs: options.timeoutMs,
    ...(headers ? { headers } : {}),
  });
  const ack = JSON.parse(decoder.decode(reply.data)) as PubAck & {
    error?: ConstructorParameters<typeof JetStreamApiError>[0];
  };
  if (ack.error) throw new JetStreamApiError(ack.error);
  if (!ack.stream) throw new Error(`${subject}: invalid PubAck ${decoder.decode(reply.data)}`);
  ack.duplicate = ack.duplicate ?? false;
  return ack;
}

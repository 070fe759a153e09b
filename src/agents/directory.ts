import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import type { z } from "zod";
import { subjects } from "../bus/subjects.ts";
import { decodeMessage } from "../bus/wire.ts";
import type { AgentManifest } from "../contracts/agent.ts";
import type { ToolManifest } from "../contracts/tool.ts";
import { fromWireJsonSchema } from "../contracts/wireJsonSchema.ts";
import { messageOf } from "../errors.ts";
import { AgentAnnouncement, AgentWithdrawal } from "./announcement.ts";

/** How a directory waits for the workers' answers to its roll call before it is ready. */
export interface DirectoryOptions {
  /** Ready once no announcement arrived for this long. Default 150 ms. */
  quietMs?: number;
  /** Ready after this long whatever arrives. Default 1 000 ms. */
  maxWaitMs?: number;
  /** Told about an announcement that is not valid (it is ignored). */
  onInvalid?: (message: string) => void;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

interface WorkerEntry {
  agents: AgentManifest[];
  tools: ToolManifest[];
  expiresAt: number;
}

/**
 * The live roster: which agents the running workers host, learnt from their
 * announcements (src/agents/announcement.ts). The scheduler plans from it and
 * a runner checks each agent's answer against the output schema announced
 * with it. A worker that stops withdraws its agents; one that dies is
 * forgotten after three missed heartbeats.
 *
 * Announcements are core NATS messages: one a worker publishes before it
 * reports ready reaches every directory before any request sent after that.
 */
export class AgentDirectory {
  readonly #workers = new Map<string, WorkerEntry>();
  /** The roster by id, rebuilt after a change or once an entry may have expired (it is read on every answer). */
  #index: Map<string, AgentManifest> | null = null;
  #toolIndex = new Map<string, ToolManifest>();
  #indexExpires = 0;
  readonly #validators = new Map<string, { source: unknown; schema: z.ZodType }>();
  readonly #subscriptions: Subscription[];
  readonly #now: () => number;

  private constructor(subscriptions: Subscription[], now: () => number) {
    this.#subscriptions = subscriptions;
    this.#now = now;
  }

  /** Subscribes, calls the roll and resolves once the workers have answered. */
  static async open(nc: NatsConnection, options: DirectoryOptions = {}): Promise<AgentDirectory> {
    const quietMs = options.quietMs ?? 150;
    const maxWaitMs = options.maxWaitMs ?? 1_000;
    const now = options.now ?? Date.now;
    let heard: () => void = () => {};
    const subscriptions: Subscription[] = [];
    const directory = new AgentDirectory(subscriptions, now);
    subscriptions.push(
      nc.subscribe(subjects.agentsAnnounce, {
        callback: (error, msg) => {
          if (error) return;
          try {
            directory.#learn(decodeMessage(msg, AgentAnnouncement, "agent announcement"));
            heard();
          } catch (invalid) {
            options.onInvalid?.(messageOf(invalid));
          }
        },
      }),
      nc.subscribe(subjects.agentsWithdraw, {
        callback: (error, msg) => {
          if (error) return;
          try {
            directory.#workers.delete(decodeMessage(msg, AgentWithdrawal, "agent withdrawal").worker);
            directory.#index = null;
          } catch (invalid) {
            options.onInvalid?.(messageOf(invalid));
          }
        },
      }),
    );
    await nc.flush();
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(quiet);
        clearTimeout(cap);
        resolve();
      };
      const cap = setTimeout(done, maxWaitMs);
      let quiet = setTimeout(done, quietMs);
      heard = () => {
        clearTimeout(quiet);
        quiet = setTimeout(done, quietMs);
      };
      nc.publish(subjects.agentsRollcall);
    });
    heard = () => {};
    return directory;
  }

  #learn(announcement: AgentAnnouncement): void {
    this.#workers.set(announcement.worker, {
      agents: announcement.agents,
      tools: announcement.tools,
      expiresAt: this.#now() + 3 * announcement.heartbeat_ms,
    });
    this.#index = null;
  }

  #byId(): Map<string, AgentManifest> {
    const now = this.#now();
    if (this.#index && now < this.#indexExpires) return this.#index;
    const byId = new Map<string, AgentManifest>();
    const tools = new Map<string, ToolManifest>();
    let expires = Number.POSITIVE_INFINITY;
    for (const [worker, entry] of this.#workers) {
      if (entry.expiresAt <= now) {
        this.#workers.delete(worker);
        continue;
      }
      expires = Math.min(expires, entry.expiresAt);
      for (const manifest of entry.agents) byId.set(manifest.id, manifest);
      for (const manifest of entry.tools) tools.set(manifest.name, manifest);
    }
    this.#index = byId;
    this.#toolIndex = tools;
    this.#indexExpires = expires;
    return byId;
  }

  /** Every live agent's manifest, by id (workers that disagree on an agent: one of theirs is taken; run one version at a time). */
  roster(): AgentManifest[] {
    return [...this.#byId().values()];
  }

  /** Every live tool's manifest (workers that disagree on a tool: one of theirs is taken). */
  tools(): ToolManifest[] {
    this.#byId();
    return [...this.#toolIndex.values()];
  }

  /** The manifest a live worker announced for this tool, if any. */
  tool(name: string): ToolManifest | undefined {
    this.#byId();
    return this.#toolIndex.get(name);
  }

  /** The manifest a live worker announced for this agent, if any. */
  manifest(agentId: string): AgentManifest | undefined {
    return this.#byId().get(agentId);
  }

  /**
   * The schema an agent's own output must satisfy: its announced JSON
   * Schema, its patterns checked by RE2 (a pattern from a worker never runs
   * as a backtracking RegExp). Undefined for an agent that announces none
   * (its output is its contribution, which the reply's schema checks) and
   * for one no live worker announces.
   */
  outputSchema(agentId: string): z.ZodType | undefined {
    const manifest = this.manifest(agentId);
    if (!manifest) return undefined;
    if (!manifest.output_schema) return undefined;
    const cached = this.#validators.get(agentId);
    if (cached && cached.source === manifest.output_schema) return cached.schema;
    const schema = fromWireJsonSchema(manifest.output_schema);
    this.#validators.set(agentId, { source: manifest.output_schema, schema });
    return schema;
  }

  /** Stops listening. */
  close(): void {
    for (const subscription of this.#subscriptions) subscription.unsubscribe();
  }
}

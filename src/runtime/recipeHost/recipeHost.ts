import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { InspectionEvent, Observer } from "xstate";
import type { AgentDirectory } from "../../agents/directory.ts";
import { BlackboardStores, blackboardOptionsFromEnv } from "../../blackboard/open.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import { ToolPolicy } from "../../tools/policy.ts";
import type { RecipeRunnerOptions } from "../runner/options.ts";
import { PipelineTools } from "../toolCalls/pipelineTools.ts";
import { ToolGate } from "../toolCalls/toolGate.ts";
import { WorkingMemory, type WorkingMemoryOptions } from "../toolCalls/workingMemory.ts";
import type { RecipeMachineDeps } from "./recipeActors.ts";
import { type RecordTurn, recipeTurnLogic } from "./recipeTurn.ts";
import { SuspensionTimers } from "./suspensionTimers.ts";

/** What a runner's recipe host is started with. */
export interface RecipeHostDeps {
  /** The agents live workers announce (shared with the runner's turns and intake; the runner closes it). */
  directory: Promise<AgentDirectory>;
  js: JetStreamClient;
  /** The turn WAL's partition count (a suspended run's timeout resumes it through its session's partition). */
  partitions: number;
  statuses: TurnStatusStore;
  log: Logger;
  /** The runner's recipe options. Every field has a default. */
  recipes?: RecipeRunnerOptions;
  /** Receives the inspection events of every recipe run's machine. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** The sessions' working memory, when the runner declares one (pipeline agents read and change it). */
  workingMemory?: WorkingMemoryOptions;
}

/**
 * How a runner hosts recipe runs: the blackboard stores runs keep their
 * state in, the tool gate their agents call tools through, the timers of
 * suspended runs' human nodes, and the `recipeTurn` actor the session
 * machine invokes for a recipe turn.
 */
export class RecipeHost {
  /** Every runner's timeouts of suspended runs: a suspension is added here, an answer forgets it. */
  readonly timers: SuspensionTimers;
  /** Tools and delegation for the pipeline's agents, through the same gate and policy as recipe runs'. */
  readonly pipelineTools: PipelineTools;
  readonly #blackboards: BlackboardStores;
  /** Where workers ask for their agents' tool calls. */
  readonly #gate: ToolGate;
  readonly #directory: Promise<AgentDirectory>;
  readonly #policy: ToolPolicy;
  readonly #recipes: RecipeRunnerOptions;
  readonly #inspect: RecipeHostDeps["inspect"];

  private constructor(nc: NatsConnection, deps: RecipeHostDeps & { timers: SuspensionTimers; policy: ToolPolicy }) {
    this.timers = deps.timers;
    this.#policy = deps.policy;
    this.#directory = deps.directory;
    this.#recipes = deps.recipes ?? {};
    this.#inspect = deps.inspect;
    this.#blackboards = new BlackboardStores({ nc, ...blackboardOptionsFromEnv(), ...this.#recipes.blackboard });
    this.#gate = new ToolGate(nc, deps.directory);
    this.pipelineTools = new PipelineTools({
      gate: this.#gate,
      directory: deps.directory,
      policy: deps.policy,
      ...(this.#recipes.toolTimeoutMs !== undefined ? { timeoutMs: this.#recipes.toolTimeoutMs } : {}),
      ...(deps.workingMemory ? { workingMemory: new WorkingMemory(nc, deps.workingMemory) } : {}),
    });
  }

  /** Starts hosting: a tool policy that does not parse is refused before anything is opened. */
  static async start(nc: NatsConnection, deps: RecipeHostDeps): Promise<RecipeHost> {
    const policy = ToolPolicy.parse(deps.recipes?.toolPolicy ?? {});
    const timers = await SuspensionTimers.start(nc, {
      js: deps.js,
      statuses: deps.statuses,
      partitions: deps.partitions,
      log: deps.log,
    });
    return new RecipeHost(nc, { ...deps, timers, policy });
  }

  /**
   * The `recipeTurn` actor logic: runs ask agents through `services` (the
   * pipeline's, interceptors included), record the turn's events with
   * `record`, and wait on `flush` for them to be stored.
   */
  logic(
    services: RecipeMachineDeps["services"],
    record: RecordTurn,
    flush: (turn: { session_id: string; turn_id: number }) => Promise<void>,
  ) {
    const recipes = this.#recipes;
    return recipeTurnLogic({
      services,
      stores: this.#blackboards,
      logicHandlers: recipes.logicHandlers ?? {},
      nodeTimeoutMs: recipes.nodeTimeoutMs ?? 60_000,
      tools: {
        gate: this.#gate,
        directory: this.#directory,
        policy: this.#policy,
        ...(recipes.toolTimeoutMs !== undefined ? { timeoutMs: recipes.toolTimeoutMs } : {}),
      },
      record,
      flush,
      ...(this.#inspect ? { inspect: this.#inspect } : {}),
    });
  }

  /** Stops the timers and the gate, then closes the blackboard stores (the directory is the runner's to close). */
  async stop(): Promise<void> {
    this.timers.close();
    this.#gate.close();
    await this.#blackboards.close();
  }
}

/**
 * Runs a compiled recipe machine in-process, deterministically: its actors
 * are provided as a host provides them (`machine.provide`), with scripted
 * agents, logic handlers, councils and blackboard store. `runRecipe`
 * resolves when the actor completes (a final state: done, failed, cancelled
 * or suspended), never after a sleep.
 *
 *   const { output, records, log } = await runRecipe(recipe, {
 *     agents: { "a.writer": (call) => `draft of ${call.inputs.topic}` },
 *     input: { inputs: { topic: "tides" } },
 *   });
 *
 * An agent script answers with a value (the node's output), an Error (the
 * node fails; `code` from the error's own `code`, else `agent_failed`), a
 * `reply({...})` (streams first, then an output, a failure, or nothing at
 * all), or a promise of any of these.
 */
import { type AnyActorRef, createActor, fromCallback, fromPromise } from "xstate";
import { compileRecipe } from "../../machines/recipe/index.ts";
import type { RecipeEvent } from "../../machines/recipe/setup.ts";
import type {
  RecipeAgentCall,
  RecipeAgentEvent,
  RecipeCouncilCall,
  RecipeCouncilResult,
  RecipeLogicCall,
  RecipePersistCall,
  RecipeRunInput,
  RecipeRunOutput,
} from "../../src/contracts/recipeProtocol.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import type { Recipe } from "../../src/recipes/recipe.ts";

/** A named stream an agent writes before it answers: `<node>:<name>`, `text/plain` unless told. */
export interface StreamScript {
  name: string;
  content_type?: string;
  chunks: string[];
  /** Close it (STREAM_END) before answering. Default true. */
  end?: boolean;
}

/** What an agent does beyond answering a bare value. */
export interface Scripted {
  streams?: StreamScript[];
  /** The answer (omitted with `fail` or `hang`). */
  output?: unknown;
  fail?: { code: string; message: string };
  /** Never answer (the call stays open until the machine stops it). */
  hang?: boolean;
}

const SCRIPTED = Symbol("scripted");
type Reply = Scripted & { [SCRIPTED]: true };

/** A scripted reply: streams, then an output, a failure, or (hang) nothing. */
export const reply = (scripted: Scripted): Reply => ({ ...scripted, [SCRIPTED]: true });
/** An agent that never answers. */
export const hang = (): Reply => reply({ hang: true });

export type AgentAnswer = unknown;

/** What a script is told about its call besides the call itself. */
export interface CallContext {
  /** 0-based, across every agent call of the run. */
  index: number;
  /** Sends an event to the running machine (e.g. `turn.cancel`). */
  send(event: RecipeEvent): void;
}

export type AgentScript = (call: RecipeAgentCall, context: CallContext) => AgentAnswer | Promise<AgentAnswer>;

export interface RunOptions {
  /** By agent id. A call to an agent without a script fails its node (code `unscripted`). */
  agents?: Record<string, AgentScript>;
  /** What `loadBlackboard` returns (default null: none stored); an Error makes it throw. */
  blackboard?: JsonObject | null | Error;
  /** Logic handlers by name (what `runLogic` runs); a thrown error fails the node. */
  logic?: Record<string, (call: RecipeLogicCall) => unknown>;
  /** What `runCouncil` does. Default: no decision. */
  council?: (call: RecipeCouncilCall) => RecipeCouncilResult | Promise<RecipeCouncilResult>;
  /** What `persist` does (default: nothing); a thrown error fails the save. */
  persist?: (call: RecipePersistCall) => void | Promise<void>;
  /** Over the defaults `{session_id: "s", turn_id: 1, inputs: {}}`. */
  input?: Partial<RecipeRunInput>;
  /** Called once the actor has started, with a way to send it events. */
  onStart?: (send: (event: RecipeEvent) => void) => void;
}

export interface RecipeRun {
  output: RecipeRunOutput;
  /** Every `record` action, in order. */
  records: TurnRecord[];
  /** Every `callAgent` input, in order. */
  calls: RecipeAgentCall[];
  logicCalls: RecipeLogicCall[];
  councilCalls: RecipeCouncilCall[];
  persisted: RecipePersistCall[];
  /**
   * What happened to the agent calls, in order: `call:<node>`, `answer:<node>`,
   * `fail:<node>`, `stop:<node>` (the machine stopped a call before it answered or failed).
   */
  log: string[];
}

/** Runs `recipe` with scripted actors; resolves with its output once the machine completes. */
export function runRecipe(recipe: Recipe, options: RunOptions = {}): Promise<RecipeRun> {
  const run: Omit<RecipeRun, "output"> = {
    records: [],
    calls: [],
    logicCalls: [],
    councilCalls: [],
    persisted: [],
    log: [],
  };
  let actor: AnyActorRef | undefined;
  const send = (event: RecipeEvent) => actor?.send(event);
  const machine = compileRecipe(recipe).provide({
    actors: {
      loadBlackboard: fromPromise(async (): Promise<JsonObject | null> => {
        if (options.blackboard instanceof Error) throw options.blackboard;
        return options.blackboard ?? null;
      }),
      persist: fromPromise(async ({ input }: { input: RecipePersistCall }): Promise<void> => {
        run.persisted.push(input);
        await options.persist?.(input);
      }),
      runLogic: fromPromise(async ({ input }: { input: RecipeLogicCall }): Promise<unknown> => {
        run.logicCalls.push(input);
        const handler = options.logic?.[input.handler];
        if (!handler) throw new Error(`no logic handler '${input.handler}'`);
        return handler(input);
      }),
      runCouncil: fromPromise(async ({ input }: { input: RecipeCouncilCall }): Promise<RecipeCouncilResult> => {
        run.councilCalls.push(input);
        return options.council ? options.council(input) : { decision: null, votes: {}, failed: [] };
      }),
      callAgent: fromCallback<{ type: "noop" }, RecipeAgentCall, RecipeAgentEvent>(({ input: call, sendBack }) => {
        const index = run.calls.push(call) - 1;
        const node = call.node;
        run.log.push(`call:${node}`);
        // live: the machine still waits for this call; settled: it has answered or failed.
        let live = true;
        let settled = false;
        const back = (event: RecipeAgentEvent) => {
          if (live) sendBack(event);
        };
        const script = options.agents?.[call.agent];
        Promise.resolve()
          .then(() => {
            if (!script) return new AgentScriptError("unscripted", `no script for agent '${call.agent}'`);
            return script(call, { index, send });
          })
          .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))))
          .then((answer) => {
            if (!live) return;
            const scripted: Scripted =
              answer instanceof Error
                ? {
                    fail: {
                      code:
                        typeof (answer as { code?: unknown }).code === "string"
                          ? (answer as AgentScriptError).code
                          : "agent_failed",
                      message: answer.message,
                    },
                  }
                : isReply(answer)
                  ? answer
                  : { output: answer };
            for (const stream of scripted.streams ?? []) {
              const stream_id = `${node}:${stream.name}`;
              back({ type: "node.stream.start", node, stream_id, content_type: stream.content_type ?? "text/plain" });
              for (const delta of stream.chunks) back({ type: "node.stream.chunk", node, stream_id, delta });
              if (stream.end !== false) back({ type: "node.stream.end", node, stream_id });
            }
            if (scripted.hang) return;
            settled = true;
            if (scripted.fail) {
              run.log.push(`fail:${node}`);
              back({ type: "node.failed", node, ...scripted.fail });
              return;
            }
            run.log.push(`answer:${node}`);
            back({
              type: "node.answered",
              node,
              output: scripted.output,
              agent: call.agent,
              worker: "w1",
              elapsed_ms: 1,
            });
          });
        return () => {
          if (live && !settled) run.log.push(`stop:${node}`);
          live = false;
        };
      }),
    },
    actions: {
      record: (_, record: TurnRecord) => {
        run.records.push(record);
      },
    },
  });
  return new Promise((resolve, reject) => {
    const started = createActor(machine, {
      input: { session_id: "s", turn_id: 1, inputs: {}, ...options.input },
    });
    actor = started;
    started.subscribe({
      complete: () => resolve({ ...run, output: started.getSnapshot().output! }),
      error: reject,
    });
    started.start();
    options.onStart?.(send);
  });
}

/** An Error with a code, as a failing agent reports it. */
export class AgentScriptError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const isReply = (value: unknown): value is Reply =>
  typeof value === "object" && value !== null && (value as Partial<Reply>)[SCRIPTED] === true;

/** The payload of a record of kind K. */
export type PayloadOf<K extends TurnRecord["kind"]> =
  Extract<TurnRecord, { kind: K }> extends { payload: infer P } ? P : never;

/** The records of one kind, with their payloads typed. */
export function recordsOf<K extends TurnRecord["kind"]>(records: readonly TurnRecord[], kind: K): PayloadOf<K>[] {
  return records.filter((record) => record.kind === kind).map((record) => record.payload as unknown as PayloadOf<K>);
}

/** The kinds of the records, in order (a run's shape at a glance). */
export const kindsOf = (records: readonly TurnRecord[]): string[] => records.map((record) => record.kind);

/** A promise and its resolver: lets scripts wait for one another (e.g. both branches asked). */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/**
 * A recipe run's use of its session's memory, as a pipeline turn uses it:
 * the memory is retrieved once, at the run's start, for the run's inputs,
 * and given to every agent call of the run (episodes, user facts, open
 * threads, procedures, the ledgers' digest); at the run's successful end the
 * run's episode (its inputs and outputs as text) is committed through the
 * same commit as a pipeline turn's (retried, kept owed when no worker
 * answers). Both steps are recorded (MEMORY_RETRIEVED, MEMORY_COMMITTED) and
 * a run that goes on from its log (taken over, or a suspension answered)
 * takes them from there: it does not retrieve or commit again.
 * `policy.memory` switches either off.
 */
import {
  isRetrievedRefs,
  type MemoryCommitReply,
  type MemoryRetrievedPayload,
  type MemoryRetrieveReply,
  retrievedRefs,
  unresolvedMemoryWarning,
} from "../../contracts/memory.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import type { TurnWarning } from "../../contracts/turn.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { codeOf, messageOf, singleLine } from "../../errors.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import type { TurnServices } from "../turnServices/turnServices.ts";

/** Most characters of the run's inputs, and of its outputs, that memory is given (the rest is cut). */
export const RUN_MEMORY_TEXT_MAX = 4_000;
/** How long the run waits for its memory before its agents go on without it. */
const RETRIEVE_BUDGET_MS = 10_000;
/** How many episodes a run's agents are given (the pipeline's number). */
const EPISODES_GIVEN = 3;

/** What an earlier attempt of the run recorded of its memory steps (read from its log). */
export interface RecordedRunMemory {
  /** Its MEMORY_RETRIEVED: references (resolved from the memory store), or an older log's text. */
  retrieved?: MemoryRetrievedPayload;
  committed?: MemoryCommitReply;
}

/** The memory calls a run makes: the runner's turn services (absent: the run has no memory). */
export type RunMemoryServices = Partial<Pick<TurnServices, "retrieveMemory" | "commitMemory">>;

/** A run's memory: what its agents are given, and the commit of its episode. */
export interface RunMemory {
  /** The memory the run's agents are given; undefined when retrieval is off or failed. */
  context(): Promise<MemoryRetrieveReply | undefined>;
  /** Commits the run's episode (its inputs, its final blackboard), once; never throws (a failure is a warning). */
  commit(blackboard: JsonObject): Promise<void>;
  /**
   * The run's machine recorded its first event: the retrieval is recorded after it (its reply may
   * come first), so the log keeps a run's own beginning (RECIPE_STARTED, PREFLIGHT_CHECKED) together.
   */
  begun(): void;
  /** The run has ended (or suspended): nothing more is recorded (a late reply is dropped). */
  end(): void;
}

/** A run that neither retrieves nor commits. */
export const NO_RUN_MEMORY: RunMemory = {
  context: async () => undefined,
  commit: async () => {},
  begun: () => {},
  end: () => {},
};

/** Text cut to `max` characters, marked where it was cut. */
const bounded = (text: string, max = RUN_MEMORY_TEXT_MAX): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

const asText = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value));

/**
 * The run's inputs as the text memory reads, as it reads a user's message: a
 * single input's value as it is, several as `key: value` lines (bounded).
 */
export function runInputText(inputs: JsonObject): string {
  const entries = Object.entries(inputs).filter(([, value]) => value !== undefined);
  if (entries.length === 1) return bounded(asText(entries[0]![1]));
  return bounded(entries.map(([key, value]) => `${key}: ${asText(value)}`).join("\n"));
}

/** The run's outputs (its final blackboard) as the reply memory reads (bounded). */
export const runOutputText = (blackboard: JsonObject): string => bounded(JSON.stringify(blackboard));

const warning = (stage: TurnWarning["stage"], error: unknown): TurnWarning => ({
  stage,
  code: codeOf(error) ?? "internal",
  message: singleLine(messageOf(error), 2_000),
  subject: "memory",
});

/**
 * The memory a run recorded, for the run that goes on from its log: an older log's text as it is;
 * references resolved from the memory store (a read by id, not a retrieval: what is gone since is
 * left out). A resolution that fails, or no memory service: the run goes on without its memory.
 */
async function recordedMemory(
  recorded: MemoryRetrievedPayload | undefined,
  request: { session_id: string; turn_id: number; user_message: string; limit: number },
  retrieveMemory: RunMemoryServices["retrieveMemory"],
  budget: () => AbortSignal,
): Promise<MemoryRetrieveReply | undefined> {
  if (!recorded || !isRetrievedRefs(recorded)) return recorded;
  if (!retrieveMemory) return undefined;
  return retrieveMemory({ ...request, resolve: recorded.refs }, budget()).catch(() => undefined);
}

/**
 * The memory of one run. Retrieval starts at once (it overlaps the run's
 * first steps: agent calls wait for it); its MEMORY_RETRIEVED (or the
 * STAGE_WARNING of its failure) is recorded when it answers and the run's
 * machine has begun, unless the run has ended by then. Off (`policy.memory.retrieve: false`), or recorded
 * before: no request is made.
 */
export function runMemory(options: {
  services: RunMemoryServices;
  recipe: Pick<Recipe, "name" | "policy">;
  turn: { session_id: string; turn_id: number };
  inputs: JsonObject;
  recorded: RecordedRunMemory;
  record: (body: TurnRecord) => void;
  signal: AbortSignal;
  /** A dry run commits nothing (it only shows what the run would do). */
  dryRun?: boolean;
}): RunMemory {
  const { services, recipe, turn, recorded, signal } = options;
  const policy = recipe.policy.memory ?? { retrieve: true, commit: true };
  let ended = false;
  const record = (body: TurnRecord) => {
    if (!ended) options.record(body);
  };
  let open = () => {};
  const begun = new Promise<void>((resolve) => {
    open = resolve;
  });
  const retrieveMemory = services.retrieveMemory;
  const request = {
    session_id: turn.session_id,
    turn_id: turn.turn_id,
    user_message: runInputText(options.inputs),
    limit: EPISODES_GIVEN,
  };
  const budget = () => AbortSignal.any([signal, AbortSignal.timeout(RETRIEVE_BUDGET_MS)]);
  let retrieved: Promise<MemoryRetrieveReply | undefined> = Promise.resolve(
    policy.retrieve ? recordedMemory(recorded.retrieved, request, retrieveMemory, budget) : undefined,
  );
  if (policy.retrieve && recorded.retrieved && isRetrievedRefs(recorded.retrieved)) {
    const fromLog = retrieved;
    // What the references name and is gone since is left out, and the log says so once the run has begun.
    retrieved = Promise.all([fromLog, begun]).then(([memory]) => {
      const gone = memory?.unresolved ?? 0;
      if (gone > 0) record({ kind: "STAGE_WARNING", payload: unresolvedMemoryWarning(gone) });
      return memory;
    });
  }
  if (policy.retrieve && !recorded.retrieved && retrieveMemory) {
    const asked = retrieveMemory(request, budget()).then(
      (reply) => ({ reply }),
      (error: unknown) => ({ error }),
    );
    // Recorded once it answers and the run has begun (not when first used), so a run that suspends before an
    // agent needs it does not ask again when it is resumed; agents get it once it is in the log.
    retrieved = Promise.all([asked, begun]).then(([settled]) => {
      if ("error" in settled) {
        record({ kind: "STAGE_WARNING", payload: warning("context", settled.error) });
        return undefined;
      }
      record({ kind: "MEMORY_RETRIEVED", payload: retrievedRefs(settled.reply) });
      return settled.reply;
    });
  }
  let committing: Promise<void> | undefined;
  const commit = (blackboard: JsonObject): Promise<void> => {
    const commitMemory = services.commitMemory;
    if (!policy.commit || recorded.committed || options.dryRun || !commitMemory) return Promise.resolve();
    committing ??= (async () => {
      const episode = {
        session_id: turn.session_id,
        turn_id: turn.turn_id,
        user_text: runInputText(options.inputs),
        response: runOutputText(blackboard),
        intent: `recipe:${recipe.name}`,
        ts: 0,
      };
      try {
        const reply = await commitMemory({ episode }, signal);
        const warnings = reply.warnings ?? [];
        record({
          kind: "MEMORY_COMMITTED",
          payload: {
            summary: reply.summary,
            stored: reply.stored,
            ...(warnings.length > 0 ? { warnings } : {}),
            ...(reply.insights?.length ? { insights: reply.insights } : {}),
          },
        });
        // As in a pipeline turn: each phase of the commit that failed is a warning of its own too.
        for (const phase of warnings) record({ kind: "STAGE_WARNING", payload: phase });
      } catch (error) {
        // The run's result stands: its memory missing a turn is a warning, not a failure.
        if (!signal.aborted) record({ kind: "STAGE_WARNING", payload: warning("memory_commit", error) });
      }
    })();
    return committing;
  };
  return {
    context: () => retrieved,
    commit,
    begun: () => open(),
    end: () => {
      ended = true;
      open();
    },
  };
}

/**
 * The one place a runner's turn services are composed: the order of every
 * interceptor, declared once ({@link turnInterceptorOrder}).
 */
import { composeTurnServices, type TurnInterceptor } from "./turnInterceptor.ts";
import type { TurnServices } from "./turnServices.ts";

/**
 * A runner's turn interceptors, outermost first (a call meets them in this
 * order, and its answer comes back through them in reverse):
 * 1. `recordedSteps`: a taken-over turn's recorded steps answered from its
 *    log; outermost, as a recorded answer is the one every layer below gave.
 * 2. `pipelineTools`: a wave agent offered its tools and delegates, and its
 *    tool calls' approvals (`onApproval`).
 * 3. `skillRecords`: the agents' skill work recorded as replies arrive.
 * 4. `stepTimings`: each call timed and recorded as STEP_TIMED (the `debug`
 *    event level only; none at any other).
 * 5. `tracing`: each stage in a span (none without a tracer provider).
 * 6. `knowledge`: an agent call that names knowledge collections (its
 *    agent's or its recipe node's) gets their passages in its context
 *    (knowledgeRetrieval.ts); above the screening, so they are screened too.
 * 7. `screening`: the request and response interceptor chains (PII, the
 *    prompt-injection guard, the stream screen).
 * 8. `ledgerDigest`: the ledgers' digest read alongside memory retrieval.
 * 9. `agentsPipeline`: a turn of the `agents` pipeline runs only the user's
 *    agents, and says their answer (agentsPipeline.ts); below the screening,
 *    so its reply is screened as the voice's is.
 * 10. `replyFallback`: the deterministic council and voice when the asked
 *    ones cannot answer in their share of the stage.
 * 11. `hostedCognition`: the scheduler, council, voice and critics run in the
 *    runner, when it hosts them; else workers are asked.
 *
 * The first two are a pipeline turn's only: a recipe turn's services start
 * at `skillRecords`.
 */
export const turnInterceptorOrder = [
  "recordedSteps",
  "pipelineTools",
  "skillRecords",
  "stepTimings",
  "tracing",
  "knowledge",
  "screening",
  "ledgerDigest",
  "agentsPipeline",
  "replyFallback",
  "hostedCognition",
] as const;

/** One layer's name in {@link turnInterceptorOrder}. */
export type TurnInterceptorName = (typeof turnInterceptorOrder)[number];

/** How many of {@link turnInterceptorOrder}'s first entries only pipeline turns have. */
const PIPELINE_ONLY = 2;

/** The pipeline turns' own layers. */
export type PipelineInterceptorName = (typeof turnInterceptorOrder)[0 | 1];

/** The layers every turn has. */
export type SharedInterceptorName = Exclude<TurnInterceptorName, PipelineInterceptorName>;

/** Every layer of a runner's turns, by name; null: not in use on this runner. */
export interface RunnerInterceptors {
  /** The layers of every turn. */
  shared: { readonly [N in SharedInterceptorName]: TurnInterceptor | null };
  /**
   * The pipeline turns' own layers, made with the services of the layers
   * beneath them (the recipe turns' services): a pipeline agent's tool
   * arguments are screened, and its delegates asked, through those.
   */
  pipeline: (below: TurnServices) => { readonly [N in PipelineInterceptorName]: TurnInterceptor | null };
}

/** What a runner's turns are given: a pipeline turn's services and a recipe turn's. */
export interface RunnerTurnServices {
  pipeline: TurnServices;
  recipe: TurnServices;
}

/**
 * A runner's turn services: `base` (the workers, or the in-process services
 * a test gives) with every layer of {@link turnInterceptorOrder} around it,
 * in that order. Composed once, when the runner starts.
 */
export function runnerTurnServices(base: TurnServices, interceptors: RunnerInterceptors): RunnerTurnServices {
  const shared = turnInterceptorOrder.slice(PIPELINE_ONLY) as readonly SharedInterceptorName[];
  const recipe = composeTurnServices(
    base,
    shared.map((name) => interceptors.shared[name]),
  );
  const own = interceptors.pipeline(recipe);
  const pipelineOnly = turnInterceptorOrder.slice(0, PIPELINE_ONLY) as readonly PipelineInterceptorName[];
  const pipeline = composeTurnServices(
    recipe,
    pipelineOnly.map((name) => own[name]),
  );
  return { pipeline, recipe };
}

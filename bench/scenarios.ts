import { localTurnServices } from "../src/runtime/localTurnServices.ts";
import type { TurnServices } from "../src/runtime/turnServices.ts";

/**
 * What the turn's model is in a run. Every scenario runs the same measurements
 * (latency, throughput at each level, stage breakdown) on a fresh cluster, and
 * the in-process pipelines with the same model, so ratios compare like with like.
 *
 * Today there is one: the offline model (zero model latency). Issue 6 item 3,
 * latency hiding with a simulated 50 ms model behind a local OpenAI-compatible
 * server, is one more entry once the LLM layer exists: its `setup` starts the
 * mock server (answering after 50 ms), returns the environment that points the
 * workers at it (endpoint URL, model name), and `services` gives the
 * in-process pipelines the LLM-backed stage logic against the same server.
 */
export interface Scenario {
  id: string;
  title: string;
  /** Starts what the scenario needs (e.g. a mock model server); returns the workers' extra environment. */
  setup?: () => Promise<{ env: NodeJS.ProcessEnv; teardown: () => Promise<void> }>;
  /** The stage logic the in-process pipelines (LangGraph.js, the statechart without NATS) call. */
  services: () => TurnServices;
  /** Also measure the floor, the runner's profile and memory per idle session (once is enough). */
  full: boolean;
}

export const SCENARIOS: Scenario[] = [
  {
    id: "offline",
    title: "offline model (deterministic rule paths, zero model latency)",
    services: localTurnServices,
    full: true,
  },
];

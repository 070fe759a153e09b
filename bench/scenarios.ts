import { localTurnServices } from "../src/runtime/turnServices/localTurnServices.ts";
import type { TurnServices } from "../src/runtime/turnServices/turnServices.ts";

/**
 * What the turn's model is in a run. Every scenario runs the same measurements
 * (latency, throughput at each level, stage breakdown, the floor, the runner's
 * profile, memory per idle session) on a fresh cluster, and the in-process
 * pipelines with the same model, so ratios compare like with like.
 *
 * There is one: the offline model (zero model latency). A model with latency
 * is measured apart, by the latency-hiding run (latencyHiding.ts).
 */
export interface Scenario {
  id: string;
  title: string;
  /** The stage logic the in-process pipelines (LangGraph.js, the statechart without NATS) call. */
  services: () => TurnServices;
}

export const SCENARIOS: Scenario[] = [
  {
    id: "offline",
    title: "offline model (deterministic rule paths, zero model latency)",
    services: localTurnServices,
  },
];

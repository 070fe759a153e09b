/**
 * The machinery of the model-based path tests, shared by every machine:
 *
 * - an {@link Oracle}: what the REAL implementation returns for an input, computed
 *   (asynchronously) before the graph is traversed, so that the event samples the
 *   traversal sends (`xstate.done.actor.*` with their `output`, `agent.replied`, the
 *   voice's stream parts) are the real ones;
 * - {@link shortestPaths}, {@link simplePaths}, {@link simplePathsFrom}: `getShortestPaths`
 *   and `getSimplePaths` from `xstate/graph` on the real machine, with those samples;
 * - a {@link ManualClock} and {@link Gates}: when a path is replayed against a live
 *   actor, every invoked service waits at a gate until the path says how it ends
 *   (the real implementation answers, it fails, or it never answers and a delay
 *   fires), so the actor follows the path step by step;
 * - a {@link Recorder}: what the live actor did, macrostep by macrostep (event,
 *   snapshot, the transitions taken, what it emitted), which the replay compares
 *   with the path and the coverage report counts.
 */

export * from "./nodes.ts";
export * from "./replay.ts";
export * from "./traversal.ts";

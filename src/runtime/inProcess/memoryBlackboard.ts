import type { BlackboardStores } from "../../blackboard/open.ts";
import {
  type BlackboardBackend,
  type BlackboardStore,
  checkSessionId,
  decodeBlackboard,
  encodeBlackboard,
} from "../../blackboard/store.ts";

/**
 * Blackboards kept in this process's memory: what the in-process engine
 * gives a recipe whatever `state.persistence` it asks for (nothing outlives
 * the process). Each store is a Map of sessions to the blackboard's JSON
 * text, checked as every backend checks it (a JSON object, a valid session
 * id, at most MAX_BLACKBOARD_BYTES), so a run that fits here fits on a
 * runner, and what `load` returns is a copy.
 */
export class MemoryBlackboardStore implements BlackboardStore {
  readonly #saved = new Map<string, string>();

  /** `backend`: the backend this store stands in for (the recipe's persistence). */
  constructor(readonly backend: BlackboardBackend) {}

  async load(sessionId: string): Promise<Record<string, unknown> | null> {
    const text = this.#saved.get(checkSessionId(this.backend, sessionId));
    return text === undefined ? null : decodeBlackboard(this.backend, sessionId, text);
  }

  async save(sessionId: string, blackboard: Record<string, unknown>): Promise<void> {
    this.#saved.set(checkSessionId(this.backend, sessionId), encodeBlackboard(this.backend, sessionId, blackboard));
  }

  async close(): Promise<void> {}
}

/** One in-memory store per backend a recipe asks for, in place of a runner's BlackboardStores. */
export function memoryBlackboardStores(): Pick<BlackboardStores, "get"> {
  const stores = new Map<BlackboardBackend, MemoryBlackboardStore>();
  return {
    get: async (backend) => {
      let store = stores.get(backend);
      if (!store) {
        store = new MemoryBlackboardStore(backend);
        stores.set(backend, store);
      }
      return store;
    },
  };
}

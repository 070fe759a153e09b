import type { IntentState, ScheduleEvent } from "./intent.ts";

/**
 * Folds one schedule event into the current set of intents (the log's
 * projection). Idempotent for repeated `fired`/`deferred`/`converged`: the
 * last due handled only moves forward.
 */
export function foldScheduleEvent(intents: Map<string, IntentState>, event: ScheduleEvent): void {
  if (event.kind === "created") {
    intents.set(event.intent.id, {
      intent: event.intent,
      status: "active",
      created_at: event.at,
      last_due: null,
      fires: 0,
      deferred: 0,
    });
    return;
  }
  const state = intents.get(event.id);
  if (!state) return;
  const handled = (due: number) => {
    state.last_due = state.last_due === null ? due : Math.max(state.last_due, due);
    if ("at" in state.intent.when && due >= state.intent.when.at && state.status === "active") state.status = "done";
  };
  switch (event.kind) {
    case "updated":
      state.intent = { ...state.intent, ...event.patch };
      // A new `when` starts afresh: what was handled under the old one says nothing of the new due times.
      if (event.patch.when) state.last_due = null;
      if (state.status === "done" && event.patch.when) state.status = "active";
      return;
    case "cancelled":
      state.status = "cancelled";
      return;
    case "fired":
      state.fires += 1;
      handled(event.due);
      return;
    case "deferred":
      state.deferred += event.count;
      handled(event.last);
      return;
    case "converged":
      state.status = "converged";
      return;
    case "erased":
      // Whoever holds this state (a fire under way) sees it stopped; nothing of it is kept.
      state.status = "cancelled";
      intents.delete(event.id);
      return;
  }
}

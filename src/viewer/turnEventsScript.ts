/**
 * The viewer page's event list, inlined in the page before the main script:
 * the turns' events as they are written, grouped by turn (the newest turn
 * first, 15 turns kept), each event one row with a short summary. Each turn's
 * group has the id `turn-<session>-<turn>`, so a link can point at it, and a
 * click on its head picks that turn for the links above (turnLinks.ts).
 * Exposes `window.conclaveTurns`: `add(event)`, `reset()`, and
 * `onChange(listener)`, told `("new", turn)` for a turn seen first, `("pick",
 * turn)` for a turn clicked and `("reset")`. Written without template literals
 * so it can live in a TypeScript string; text is set with textContent only.
 */
export const TURN_EVENTS_SCRIPT = String.raw`
(function () {
  "use strict";
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function summary(event) {
    var p = event.payload || {};
    switch (event.kind) {
      case "TURN_STARTED": return p.user_input;
      case "TURN_STAGE_CHANGED": return p.stage;
      case "WAVE_STARTED": return "wave " + p.wave + ": " + (p.agents || []).join(", ");
      case "AGENT_COMPLETED": return p.agent_id + (p.worker ? " @ " + p.worker : "");
      case "AGENT_FAILED": return p.agent_id + ": " + p.code;
      case "STAGE_WARNING": return p.stage + ": " + p.message;
      case "CONSENSUS_UPDATED": return "level " + p.level;
      case "COUNCIL_DECISION_MADE": return (p.speak ? "speak: " : "silent: ") + p.intent;
      case "VOICE_RENDERED": return p.text;
      case "CRITICS_UPDATED": return p.passed ? "passed" : "failed";
      case "TURN_COMPLETED": return (p.outcome && p.outcome.status) + " in " + Math.round(p.total_time_ms || 0) + " ms";
      case "RECIPE_STARTED": return p.recipe + (p.version ? " v" + p.version : "") + " (" + p.shape + ")";
      case "NODE_STARTED": return p.node + " (" + p.kind + ")" + (p.attempt > 1 ? " attempt " + p.attempt : "");
      case "NODE_COMPLETED": return p.node + (p.agent ? ": " + p.agent : "");
      case "NODE_FAILED": return p.node + ": " + p.code + (p.retrying ? ", retrying" : "");
      case "ROUTE_TAKEN": return p.from + " \u2192 " + p.to + (p.reason ? " (" + p.reason + ")" : "");
      case "EVALUATION_SCORED": return p.node + ": " + p.score + (p.passed ? " passed" : " failed");
      case "HUMAN_INPUT_REQUESTED": return p.node + ": " + p.prompt + (p.required_role ? " [" + p.required_role + "]" : "");
      case "TURN_SUSPENDED": return "waits at " + p.node;
      case "HUMAN_INPUT_RECEIVED": return p.node + (p.timed_out ? ": timed out" : p.user_id ? " by " + p.user_id : "");
      default: return "";
    }
  }

  var eventList = document.getElementById("event-list");
  var turnGroups = new Map();
  var listeners = [];
  function notify(change, turn) { listeners.forEach(function (listener) { listener(change, turn); }); }

  function add(event) {
    var id = event.session_id + "/" + event.turn_id;
    var group = turnGroups.get(id);
    if (!group) {
      var turn = { session: event.session_id, turn: event.turn_id, id: groupId(event.session_id, event.turn_id) };
      group = el("li", "turn");
      group.id = turn.id;
      group.dataset.turn = id;
      var head = group.appendChild(el("div", "turn-head", "session " + event.session_id + " \u00b7 turn " + event.turn_id));
      head.title = "show this turn's links";
      head.addEventListener("click", function () { notify("pick", turn); });
      group.rows = group.appendChild(el("ol", "turn-events"));
      turnGroups.set(id, group);
      eventList.insertBefore(group, eventList.firstChild);
      while (turnGroups.size > 15) {
        var oldest = turnGroups.keys().next().value;
        turnGroups.get(oldest).remove();
        turnGroups.delete(oldest);
      }
      notify("new", turn);
    }
    var row = el("li", "event kind-" + event.kind);
    row.dataset.kind = event.kind;
    row.appendChild(el("span", "seq", "#" + event.seq));
    row.appendChild(el("b", null, " " + event.kind + " "));
    var text = summary(event);
    if (text !== undefined && text !== null && text !== "") row.appendChild(el("span", "summary", String(text).slice(0, 160)));
    group.rows.appendChild(row);
  }

  function reset() {
    eventList.textContent = "";
    turnGroups.clear();
    notify("reset");
  }

  /** The element id of a turn's group (session ids are letters, digits, _ and -). */
  function groupId(session, turn) { return "turn-" + session + "-" + turn; }

  window.conclaveTurns = { add: add, reset: reset, groupId: groupId, onChange: function (listener) { listeners.push(listener); } };
})();
`;

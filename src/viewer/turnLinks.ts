/**
 * The viewer page's links for the turn shown (the newest turn in the event
 * list, or the one whose head was clicked): the conversation panel (on that
 * turn's session), the turn and agent machines, the turn's events (in the list,
 * and its whole stored log as JSON from the viewer's `/log.json`), and its
 * traces: a link into the trace UI when the viewer was given `--traces-url`,
 * else "tracing off", never a dead link.
 *
 * Self-contained (markup, style and script, ids `turn-…`/`link-…`); the script
 * reads the page's `#viewer-config` and listens to `window.conclaveTurns`
 * (turnEventsScript.ts).
 */

/** Where a turn goes in a `--traces-url` template. */
const PLACEHOLDERS = ["{session}", "{turn}"] as const;

/**
 * A `--traces-url` value checked: undefined when not given, null when it is
 * not an http(s) URL naming both `{session}` and `{turn}`, else the template.
 */
export function tracesUrlArg(value: string | undefined): string | undefined | null {
  if (value === undefined) return undefined;
  if (!/^https?:\/\/[^\s/]+/i.test(value)) return null;
  return PLACEHOLDERS.every((placeholder) => value.includes(placeholder)) ? value : null;
}

const STYLE = `
  #turn-links { flex: none; background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 6px 10px; }
  #turn-links h2 { margin: 0 0 4px; font-size: 15px; }
  #turn-links h2 small { font-weight: normal; color: #6e7781; font-size: 11px; }
  #turn-links nav { display: flex; flex-wrap: wrap; gap: 4px 12px; font-size: 12px; }
  #turn-links a { color: #0969da; }
  #turn-links .off { color: #8c959f; }
  #turn-links .follow { margin-left: 6px; font-size: 11px; }
  .turn.picked > .turn-head { background: #ddf4ff; }
  .turn-head { cursor: pointer; }
`;

const MARKUP = `
<section id="turn-links">
  <h2>Turn <small id="turn-shown">none yet: the newest turn shows here</small><a href="#" class="follow" id="turn-follow" hidden>follow the newest</a></h2>
  <nav>
    <a id="link-conversation" href="#conv-panel">conversation</a>
    <span>machines: <a id="link-machine-turn" href="#machine-turn">turn</a>, <a id="link-machine-agent" href="#machine-agent">agent</a></span>
    <span>event log: <a id="link-events" href="#events">in the list</a>, <a id="link-log" href="log.json" hidden>stored (JSON)</a></span>
    <a id="link-traces" target="_blank" rel="noopener" hidden>traces</a><span id="traces-off" class="off">tracing off</span>
  </nav>
</section>
`;

// Plain browser JavaScript: the page has no build step.
const SCRIPT = String.raw`
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var config = JSON.parse($("viewer-config").textContent);
  var turns = window.conclaveTurns;
  var shown = null, pinned = false;
  var traces = $("link-traces"), tracesOff = $("traces-off");
  if (!config.tracesUrl) tracesOff.title = "start the viewer with --traces-url to link each turn's traces";

  function show(turn, pin) {
    shown = turn;
    pinned = pin;
    $("turn-follow").hidden = !pin;
    document.querySelectorAll(".turn.picked").forEach(function (node) { node.classList.remove("picked"); });
    if (!turn) {
      $("turn-shown").textContent = "none yet: the newest turn shows here";
      $("link-events").href = "#events";
      $("link-log").hidden = true;
      traces.hidden = true;
      tracesOff.hidden = false;
      return;
    }
    $("turn-shown").textContent = "session " + turn.session + " \u00b7 turn " + turn.turn;
    var group = $(turn.id);
    if (group && pin) group.classList.add("picked");
    $("link-events").href = "#" + turn.id;
    var log = $("link-log");
    log.href = "log.json?session=" + encodeURIComponent(turn.session) + "&turn=" + turn.turn;
    log.hidden = false;
    if (config.tracesUrl) {
      traces.href = config.tracesUrl.split("{session}").join(encodeURIComponent(turn.session))
        .split("{turn}").join(encodeURIComponent(String(turn.turn)));
      traces.hidden = false;
      tracesOff.hidden = true;
    }
  }

  turns.onChange(function (change, turn) {
    if (change === "reset") show(null, false);
    else if (change === "pick") show(turn, true);
    else if (!pinned) show(turn, false);
  });
  $("turn-follow").addEventListener("click", function (event) { event.preventDefault(); show(null, false); });
  // The conversation panel, on the shown turn's session (unless a message is on its way).
  $("link-conversation").addEventListener("click", function () {
    var panel = $("conv-panel");
    if (!panel) return;
    panel.open = true;
    var busy = $("conv-form") && $("conv-form").classList.contains("conv-busy");
    if (shown && !busy && $("conv-thread")) $("conv-thread").value = shown.session;
    if ($("conv-text")) $("conv-text").focus();
  });
  show(null, false);
})();
`;

/** The links as the page includes them: style, markup and script (after the event list's script). */
export const TURN_LINKS = { style: STYLE, markup: MARKUP, script: SCRIPT };

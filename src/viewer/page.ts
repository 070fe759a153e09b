import type { MachineGraph } from "../graph/machineGraph.ts";
import { CONVERSATION_PANEL } from "./conversationPanel.ts";
import { DIAGRAM_SCRIPT, DIAGRAM_STYLE } from "./diagramScript.ts";
import { VIEWER_SCRIPT } from "./pageScript.ts";
import { TURN_EVENTS_SCRIPT } from "./turnEventsScript.ts";
import { TURN_LINKS } from "./turnLinks.ts";

/** What the page is told besides the machines: see the viewer's --gateway and --traces-url. */
export interface PageConfig {
  /** The AG-UI endpoint the conversation panel talks to, unless the page's `?gateway=` names another. */
  gateway?: string;
  /** The trace UI's page for a turn, `{session}` and `{turn}` replaced; without it the page says "tracing off". */
  tracesUrl?: string;
}

/**
 * The viewer's one page: styles, the machines' graphs as JSON and the scripts
 * inline, plus the layout library from the viewer itself (`elk.js`): works offline.
 */
export function viewerPage(machines: { key: string; graph: MachineGraph }[], config: PageConfig = {}): string {
  // `<` escaped so no machine name (or URL) can close the script element.
  const data = JSON.stringify(machines).replace(/</g, "\\u003c");
  const settings = JSON.stringify(config).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conclave viewer</title>
<style>${STYLE}${DIAGRAM_STYLE}${TURN_LINKS.style}</style>
</head>
<body>
<header>
  <h1>Conclave viewer</h1>
  <span id="status" class="down">connecting…</span>
  <span class="hint">statecharts drawn from <code>machines/</code> and from the recipes seen running; states light up as live actors enter them</span>
  <span id="processes"></span>
</header>
<script type="application/json" id="viewer-config">${settings}</script>
<div class="layout">
  <main>
    <div id="recipes"></div>
    <div id="machines"></div>
  </main>
  <aside id="side-col">
    ${TURN_LINKS.markup}
    <section id="events">
      <h2>Turn events <small>live from conclave.events.&gt;</small></h2>
      <ol id="event-list"></ol>
    </section>
    ${CONVERSATION_PANEL}
  </aside>
</div>
<script type="application/json" id="machine-data">${data}</script>
<script src="elk.js"></script>
<script>${DIAGRAM_SCRIPT}</script>
<script>${TURN_EVENTS_SCRIPT}</script>
<script>${TURN_LINKS.script}</script>
<script>${VIEWER_SCRIPT}</script>
</body>
</html>
`;
}

const STYLE = `
  * { box-sizing: border-box; }
  body { margin: 0; font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; background: #f6f8fa; }
  header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 12px; padding: 8px 16px; background: #1f2430; color: #e6e6e6; }
  header h1 { margin: 0; font-size: 17px; }
  header .hint { color: #aab; font-size: 12px; }
  header code { color: #9fd3ff; }
  #status { font-weight: 600; padding: 1px 8px; border-radius: 10px; }
  #status.live { background: #1a7f37; color: #fff; }
  #status.down { background: #9a6700; color: #fff; }
  #processes .process { margin-right: 6px; font-size: 11px; background: #2d3446; padding: 1px 6px; border-radius: 4px; }
  /* Wide: the page is the window; the machines scroll in their column, the side column (links, events,
     conversation) stacks its parts, none over another. Narrow: one column, the side column below. */
  :root { --fit-height: 80vh; }
  .layout { display: flex; flex-direction: column; gap: 12px; padding: 12px; }
  main { min-width: 0; }
  #side-col { display: flex; flex-direction: column; gap: 8px; min-width: 0; }
  #events { max-height: 60vh; }
  @media (min-width: 960px) {
    :root { --fit-height: calc(100vh - 150px); }
    body { height: 100vh; display: flex; flex-direction: column; }
    header { flex: none; }
    .layout { flex: 1; min-height: 0; flex-direction: row; align-items: stretch; }
    main { flex: 1; overflow: auto; }
    #side-col { width: 400px; flex: none; min-height: 0; }
    #events { flex: 1 1 auto; min-height: 100px; max-height: none; }
  }
  @media (max-width: 1279px) {
    .machine-body { flex-direction: column; align-items: stretch; }
    .machine-body > .side { width: auto; }
  }
  .machine { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 12px; margin-bottom: 12px; }
  .machine h2 { margin: 0 0 6px; font-size: 15px; }
  .machine.recipe { border-color: #8250df; }
  .machine h2 .tag { margin-left: 8px; font-size: 11px; font-weight: normal; color: #8250df; border: 1px solid #d8b9ff; border-radius: 4px; padding: 0 4px; }
  .state-head .node-kind { color: #8250df; border-color: #d8b9ff; }
  .live-count { color: #1a7f37; font-size: 12px; }
  .root-edges { font-size: 11px; color: #57606a; }
  .machine-body { display: flex; gap: 12px; align-items: flex-start; }
  .cards-body { min-width: 0; }
  .children { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 6px; }
  .state { border: 1.5px solid #8c959f; border-radius: 8px; background: #fff; padding: 4px 7px; min-width: 110px; }
  .state > .children { margin-top: 5px; padding: 4px; background: #f6f8fa; border-radius: 6px; }
  .state > .children.regions > .state { border-style: dashed; }
  .state-head { display: flex; gap: 6px; align-items: baseline; }
  .state-head .name { font-weight: 600; }
  .state-head .tag { font-size: 10px; color: #6e7781; border: 1px solid #d0d7de; border-radius: 4px; padding: 0 3px; }
  .state-head .count { margin-left: auto; color: #1a7f37; font-weight: 700; }
  .initial > .state-head .name::before { content: "\\25B8 "; color: #6e7781; }
  .kind-final { border: 3px double #57606a; }
  .kind-history { border-radius: 18px; font-style: italic; }
  .invokes { font-size: 11px; color: #6e7781; }
  .transitions { list-style: none; margin: 3px 0 0; padding: 0; font-size: 11px; color: #57606a; }
  .transitions .ev { color: #0969da; }
  .transitions .guard { color: #8250df; }
  .transitions .kind-after .ev { color: #9a6700; }
  .transitions .kind-invokeError .ev { color: #cf222e; }
  .state.active { border-color: #1a7f37; background: #dafbe1; box-shadow: 0 0 0 2px #1a7f37; }
  .state.active > .children { background: #f0fff4; }
  .state.last { outline: 2px dashed #1a7f37; outline-offset: 1px; }
  .state.waiting { border-color: #bf8700; background: #fff8c5; box-shadow: 0 0 0 2px #bf8700; }
  .state.waiting > .state-head .name::after { content: " \\2014  waits for an answer"; font-weight: normal; color: #9a6700; }
  .side { width: 240px; flex: none; font-size: 12px; }
  .side h3 { margin: 4px 0; font-size: 12px; color: #57606a; text-transform: uppercase; letter-spacing: .03em; }
  .side ul, .side ol { margin: 0 0 8px; padding-left: 18px; }
  .actors { list-style: none; padding-left: 0 !important; }
  .actors .session { font-size: 11px; background: #eaeef2; padding: 0 4px; border-radius: 3px; }
  .actors .none { color: #8c959f; }
  .trail small { color: #8c959f; }
  #events { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 10px; overflow: auto; }
  #events h2 { margin: 0 0 6px; font-size: 15px; }
  #events h2 small { font-weight: normal; color: #6e7781; font-size: 11px; }
  #event-list { list-style: none; margin: 0; padding: 0; }
  .turn { margin-bottom: 10px; }
  .turn-head { font-weight: 600; border-bottom: 1px solid #d0d7de; margin-bottom: 2px; }
  .turn-events { margin: 0; padding: 0; list-style: none; font-size: 11.5px; }
  .event .seq { display: inline-block; width: 28px; color: #8c959f; }
  .event .summary { color: #57606a; }
  .event.kind-TURN_COMPLETED b { color: #1a7f37; }
  .event.kind-STAGE_WARNING b, .event.kind-AGENT_FAILED b, .event.kind-SAFETY_INTERRUPT b { color: #cf222e; }
`;

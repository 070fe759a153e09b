/**
 * The viewer page's script, inlined in the page (no bundler, no CDN). It draws
 * each machine from its graph JSON as nested boxes, then applies the server's
 * Server-Sent Events (the laid-out SVG diagram comes from diagramScript.ts;
 * the boxes built here are the cards of the detail view): `recipe` adds the diagram of a recipe seen running
 * (`recipe-gone` removes one), `actor` updates light up the states live actors
 * are in (a state that was just left fades out, so a fast turn still shows its
 * path; the node a suspended recipe run waits at is marked; the transition the
 * followed actor just took is lit on the diagram), `turn-event`s go to
 * the event list (turnEventsScript.ts). Written without template literals so it
 * can live in a TypeScript string. DOM is built with textContent only.
 */
export const VIEWER_SCRIPT = String.raw`
(function () {
  "use strict";
  var machines = JSON.parse(document.getElementById("machine-data").textContent);
  var views = new Map();
  // What the page has shown, for whoever inspects it (the browser test does).
  var recorded = { highlighted: [], lit: [], taken: [], waiting: [], recipes: [], sessions: {}, actorUpdates: 0, turnEvents: 0 };
  window.conclaveViewer = recorded;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // ---- diagrams ------------------------------------------------------------

  function pathOf(state) { return state.path.join("."); }

  function renderMachine(entry) {
    var graph = entry.graph;
    var nodes = entry.nodes || {};
    var view = { key: entry.key, graph: graph, boxes: new Map(), actors: new Map(), followed: null,
      trail: [], trailKey: null, last: null, section: null, svgNodes: new Map(), svgEdges: [], lastActive: null,
      taken: new Set(), pathOfId: new Map() };
    var byId = new Map();
    (function index(state) { byId.set(state.id, state); view.pathOfId.set(state.id, pathOf(state)); state.children.forEach(index); })(graph.root);
    var edgesBySource = new Map();
    graph.edges.forEach(function (edge) {
      if (!edgesBySource.has(edge.source)) edgesBySource.set(edge.source, []);
      edgesBySource.get(edge.source).push(edge);
    });
    var targetName = function (edge) {
      var target = byId.get(edge.target);
      return target && target.path.length ? pathOf(target) : graph.id;
    };

    function transitions(stateId) {
      var list = el("ul", "transitions");
      (edgesBySource.get(stateId) || []).forEach(function (edge) {
        var item = el("li", "edge kind-" + edge.kind);
        var bracket = edge.label.indexOf(" [");
        item.appendChild(el("span", "ev", bracket < 0 ? edge.label : edge.label.slice(0, bracket)));
        if (bracket >= 0) item.appendChild(el("span", "guard", edge.label.slice(bracket)));
        var where = edge.targetless ? " \u21ba stays" : edge.source === edge.target ? " \u21bb re-enters" : " \u2192 " + targetName(edge);
        item.appendChild(el("span", "to", where));
        list.appendChild(item);
      });
      return list;
    }

    function renderState(state, parent) {
      var box = el("div", "state kind-" + state.kind + (parent && parent.initial === state.id ? " initial" : ""));
      box.dataset.statePath = pathOf(state);
      box.dataset.stateId = state.id;
      var head = el("div", "state-head");
      var name = state.kind === "history" ? state.key + " (" + (state.history === "deep" ? "H*" : "H") + ")" : state.key;
      head.appendChild(el("span", "name", name));
      if (state.kind === "parallel") head.appendChild(el("span", "tag", "parallel"));
      if (state.kind === "final") head.appendChild(el("span", "tag", "final"));
      var node = nodes[pathOf(state)];
      if (node) head.appendChild(el("span", "tag node-kind", node.kind));
      head.appendChild(el("span", "count", ""));
      box.appendChild(head);
      if (state.invokes.length) box.appendChild(el("div", "invokes", "invokes " + state.invokes.join(", ")));
      if (edgesBySource.has(state.id)) box.appendChild(transitions(state.id));
      if (state.children.length) {
        var children = el("div", "children" + (state.kind === "parallel" ? " regions" : ""));
        state.children.forEach(function (child) { children.appendChild(renderState(child, state)); });
        box.appendChild(children);
      }
      view.boxes.set(pathOf(state), box);
      return box;
    }

    var section = el("section", "machine" + (entry.recipe ? " recipe" : ""));
    section.dataset.machine = entry.key;
    section.id = "machine-" + entry.key;
    section.dataset.machineId = graph.id;
    if (entry.recipe) section.dataset.recipe = entry.recipe;
    var title = el("h2", null, entry.recipe ? "recipe " + entry.recipe : entry.key);
    if (entry.recipe) {
      title.appendChild(el("span", "tag", entry.shape + (entry.version ? " \u00b7 v" + entry.version : "")));
      title.title = entry.key;
    }
    title.appendChild(el("span", "live-count", ""));
    section.appendChild(title);
    var body = el("div", "machine-body");
    var drawing = body.appendChild(el("div", "graph", "laying out…"));
    var side = el("aside", "side");
    side.appendChild(el("h3", null, "live actors"));
    view.actorList = side.appendChild(el("ul", "actors"));
    side.appendChild(el("h3", null, "path of the latest actor"));
    view.trailList = side.appendChild(el("ol", "trail"));
    view.trailList.dataset.machine = entry.key;
    body.appendChild(side);
    section.appendChild(body);
    // The detail view: every state as a card listing its transitions as text.
    var cards = section.appendChild(el("details", "cards"));
    cards.appendChild(el("summary", null, "states and transitions as cards"));
    if (edgesBySource.has(graph.root.id)) {
      var rootEdges = el("div", "root-edges", "in any state: ");
      rootEdges.appendChild(transitions(graph.root.id));
      cards.appendChild(rootEdges);
    }
    var cardList = cards.appendChild(el("div", "cards-body children"));
    graph.root.children.forEach(function (child) { cardList.appendChild(renderState(child, graph.root)); });
    section.dataset.diagram = "pending";
    var drawn = window.conclaveDiagram
      ? window.conclaveDiagram.draw(graph, drawing)
      : Promise.reject(new Error("the diagram script did not load"));
    drawn.then(function (result) {
      view.graphBox = drawing;
      view.svgNodes = result.nodes;
      view.svgEdges = result.edges;
      section.dataset.diagram = "drawn";
      paint(view);
    }, function (error) {
      drawing.textContent = "";
      drawing.appendChild(el("p", "note", "no diagram (" + (error && error.message) + "): the cards below show the machine"));
      cards.open = true;
      section.dataset.diagram = "failed";
    });
    view.section = section;
    view.liveCount = title.querySelector(".live-count");
    return view;
  }

  // ---- live state ----------------------------------------------------------

  // A state value ({ agents: "wave" }) as the paths of every active state: agents, agents.wave.
  function activePaths(value, prefix) {
    prefix = prefix || [];
    if (value === null || value === undefined) return [];
    if (typeof value === "string") return [prefix.concat(value).join(".")];
    if (typeof value !== "object") return [];
    return Object.keys(value).reduce(function (all, key) {
      var here = prefix.concat(key);
      return all.concat([here.join(".")], activePaths(value[key], here));
    }, []);
  }
  function leafPaths(value, prefix) {
    prefix = prefix || [];
    if (typeof value === "string") return [prefix.concat(value).join(".")];
    if (!value || typeof value !== "object") return [];
    return Object.keys(value).reduce(function (all, key) { return all.concat(leafPaths(value[key], prefix.concat(key))); }, []);
  }

  function onActor(update) {
    recorded.actorUpdates++;
    var view = views.get(update.machine);
    if (!view) return;
    if (update.status === "created") (recorded.sessions[view.key] = recorded.sessions[view.key] || []).push(update.session);
    var live = update.status === "created" || update.status === "active";
    if (update.status === "created") {
      view.followed = update.session;
      view.trail = [];
      view.trailKey = null;
      view.trailList.textContent = "";
      view.lastActive = null;
      view.taken = new Set();
    }
    if (update.session === view.followed && update.value !== null && update.value !== undefined) noteTaken(view, update.value, update.event);
    if (live) view.actors.set(update.session, update);
    else {
      view.actors.delete(update.session);
      if (update.session === view.followed) view.last = update;
    }
    if (update.session === view.followed && update.value !== null) addToTrail(view, update);
    paint(view);
  }

  // The transitions the followed actor just took: from a state it was in to one it has just entered,
  // those of the event that moved it if any (else eventless ones did), the innermost source first
  // (a machine-wide transition counts only when no state's own explains the move).
  function noteTaken(view, value, event) {
    var now = activePaths(value);
    var before = view.lastActive;
    view.lastActive = now;
    if (!before) return;
    var was = new Set(before.concat([""]));
    var is = new Set(now);
    if (!now.some(function (path) { return !was.has(path); })) return;
    var moves = view.graph.edges.filter(function (edge) {
      var source = view.pathOfId.get(edge.source), target = view.pathOfId.get(edge.target);
      return was.has(source) && is.has(target) && !was.has(target);
    });
    if (moves.some(function (edge) { return edge.event === event; }))
      moves = moves.filter(function (edge) { return edge.event === event; });
    var best = -1, taken = [];
    view.graph.edges.forEach(function (edge, index) {
      if (moves.indexOf(edge) < 0) return;
      var source = view.pathOfId.get(edge.source);
      var depth = source === "" ? 0 : source.split(".").length;
      if (depth > best) { best = depth; taken = []; }
      if (depth === best) taken.push(index);
    });
    view.taken = new Set(taken);
    taken.forEach(function (index) { recorded.taken.push(view.key + ":" + view.graph.edges[index].label); });
  }

  // A big diagram scrolls in its own box: bring the state just lit into it (the page itself does not move).
  function reveal(box, node) {
    if (!box || (box.scrollHeight <= box.clientHeight && box.scrollWidth <= box.clientWidth)) return;
    var at = node.getBoundingClientRect(), frame = box.getBoundingClientRect();
    if (at.top < frame.top || at.bottom > frame.bottom) box.scrollTop += at.top - frame.top - frame.height / 3;
    if (at.left < frame.left || at.right > frame.right) box.scrollLeft += at.left - frame.left - frame.width / 3;
  }

  function addToTrail(view, update) {
    var leaves = leafPaths(update.value).join(" + ");
    var key = leaves + "|" + update.status;
    if (key === view.trailKey) return;
    view.trailKey = key;
    var previous = view.trail[view.trail.length - 1];
    view.trail.push({ leaves: leaves, ts: update.ts });
    var item = el("li", null, leaves + (update.status === "active" ? "" : " (" + update.status + ")"));
    item.dataset.leaves = leaves;
    if (previous) item.appendChild(el("small", null, " +" + Math.max(0, update.ts - previous.ts) + " ms"));
    view.trailList.appendChild(item);
    while (view.trailList.children.length > 80) view.trailList.removeChild(view.trailList.firstChild);
  }

  function paint(view) {
    var counts = new Map();
    view.actors.forEach(function (actor) {
      activePaths(actor.value).forEach(function (path) { counts.set(path, (counts.get(path) || 0) + 1); });
    });
    var last = view.last && view.actors.size === 0 ? new Set(activePaths(view.last.value)) : new Set();
    var newlyLit = null;
    // A recipe run suspended at a human node: that node is marked until a run of this recipe goes on.
    var waiting = new Set();
    view.actors.forEach(function (actor) { if (actor.waiting) waiting.add(actor.waiting); });
    if (view.last && view.actors.size === 0 && view.last.waiting) waiting.add(view.last.waiting);
    view.boxes.forEach(function (box, path) {
      var n = counts.get(path) || 0;
      var was = box.classList.contains("active");
      if ((n > 0 && !was) || (last.has(path) && !box.classList.contains("last"))) recorded.highlighted.push(view.key + ":" + path);
      box.classList.toggle("active", n > 0);
      box.classList.toggle("last", last.has(path));
      if (waiting.has(path) && !box.classList.contains("waiting")) recorded.waiting.push(view.key + ":" + path);
      box.classList.toggle("waiting", waiting.has(path));
      // Just left: fade out, so a path taken in milliseconds still shows.
      if (was && n === 0 && box.animate)
        box.animate([{ backgroundColor: "#9be9a8" }, { backgroundColor: "transparent" }], { duration: 2000, easing: "ease-out" });
      box.querySelector(":scope > .state-head > .count").textContent = n > 1 ? "\u00d7" + n : "";
      var node = view.svgNodes.get(path);
      if (node) {
        if (n > 0 && !node.classList.contains("active")) {
          recorded.lit.push(view.key + ":" + path);
          newlyLit = node;
        }
        node.classList.toggle("active", n > 0);
        if (last.has(path) && !node.classList.contains("last")) newlyLit = node;
        node.classList.toggle("last", last.has(path));
        node.classList.toggle("waiting", waiting.has(path));
        var title = node.querySelector(":scope > title") || node.insertBefore(document.createElementNS("http://www.w3.org/2000/svg", "title"), node.firstChild);
        title.textContent = n > 0 ? n + " live" : path;
      }
    });
    view.svgEdges.forEach(function (drawn, index) {
      var taken = view.taken.has(index);
      drawn.group.classList.toggle("taken", taken);
      drawn.path.setAttribute("marker-end", "url(#" + drawn.path.dataset.marker + (taken ? "-taken" : "") + ")");
      // Drawn last, so it shows above the lines it crosses.
      if (taken && drawn.group.nextSibling) drawn.group.parentNode.appendChild(drawn.group);
    });
    if (newlyLit) reveal(view.graphBox, newlyLit);
    view.liveCount.textContent = view.actors.size ? " \u00b7 " + view.actors.size + " live" : "";
    view.actorList.textContent = "";
    var shown = 0;
    view.actors.forEach(function (actor) {
      if (shown++ >= 8) return;
      var item = el("li", null);
      item.appendChild(el("code", "session", actor.session));
      item.appendChild(el("span", "value", " " + (leafPaths(actor.value).join(" + ") || actor.status)));
      view.actorList.appendChild(item);
    });
    if (view.actors.size > 8) view.actorList.appendChild(el("li", "more", "and " + (view.actors.size - 8) + " more"));
    if (view.actors.size === 0) view.actorList.appendChild(el("li", "none", "none right now"));
  }

  // ---- wiring --------------------------------------------------------------

  var turns = window.conclaveTurns;
  function onTurnEvent(event) {
    recorded.turnEvents++;
    turns.add(event);
  }
  var main = document.getElementById("machines");
  var recipeList = document.getElementById("recipes");
  var processes = document.getElementById("processes");
  function addRecipe(entry) {
    if (views.has(entry.key)) return;
    var view = renderMachine(entry);
    views.set(entry.key, view);
    recorded.recipes.push(entry.key);
    recipeList.insertBefore(view.section, recipeList.firstChild);
    paint(view);
  }
  function removeRecipe(key) {
    var view = views.get(key);
    if (!view || view.graph.id !== "recipe") return;
    view.section.remove();
    views.delete(key);
  }
  function reset() {
    views.clear();
    main.textContent = "";
    recipeList.textContent = "";
    machines.forEach(function (entry) {
      var view = renderMachine(entry);
      views.set(entry.graph.id, view);
      main.appendChild(view.section);
      paint(view);
    });
    turns.reset();
    processes.textContent = "";
  }
  reset();

  var status = document.getElementById("status");
  var source = new EventSource("events");
  source.addEventListener("hello", function () { reset(); status.textContent = "live"; status.className = "live"; });
  source.addEventListener("process", function (message) {
    var name = JSON.parse(message.data).process;
    processes.appendChild(el("code", "process", name));
  });
  source.addEventListener("recipe", function (message) { addRecipe(JSON.parse(message.data)); });
  source.addEventListener("recipe-gone", function (message) { removeRecipe(JSON.parse(message.data).key); });
  source.addEventListener("actor", function (message) { onActor(JSON.parse(message.data)); });
  source.addEventListener("turn-event", function (message) { onTurnEvent(JSON.parse(message.data)); });
  source.onerror = function () { status.textContent = "reconnecting\u2026"; status.className = "down"; };
})();
`;

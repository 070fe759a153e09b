/**
 * The viewer page's diagram drawer, inlined in the page before the main
 * script. It lays a machine's graph out with ELK (elkjs's browser bundle, served
 * by the viewer from node_modules as `elk.js`: no CDN) and draws it as SVG:
 * every state a box (compound states as boxes nesting their children, the
 * root as a box only when it has transitions of its own or is parallel), every
 * transition one path with an arrowhead and its label. Exposes
 * `window.conclaveDiagram.draw(graph, container)`, resolving to the drawn
 * nodes (by state path) and edges, which the main script lights up.
 * Written without template literals so it can live in a TypeScript string;
 * text is set with textContent only.
 */
export const DIAGRAM_SCRIPT = String.raw`
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var NAME_CHAR = 7.4, SMALL_CHAR = 6.1, LABEL_HEIGHT = 13;
  var elk = typeof ELK === "function" ? new ELK() : null;
  var drawn = 0;
  // One layout per graph: the page redraws every machine when it (re)connects.
  var layouts = new WeakMap();

  function shape(tag, attrs, parent) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (name) { node.setAttribute(name, String(attrs[name])); });
    if (parent) parent.appendChild(node);
    return node;
  }
  function words(tag, attrs, text, parent) {
    var node = shape(tag, attrs, parent);
    node.textContent = text;
    return node;
  }
  var widthOf = function (text, perChar) { return Math.ceil(String(text).length * perChar); };
  var nameOf = function (state) {
    return state.kind === "history" ? state.key + (state.history === "deep" ? " (H*)" : " (H)") : state.key;
  };
  var invokesOf = function (state) { return state.invokes.length ? "invokes " + state.invokes.join(", ") : ""; };

  /** The root is a box of its own when transitions leave or reach it, or it is parallel (as in the graph export). */
  function drawsRootBox(graph) {
    return graph.root.kind === "parallel" || graph.edges.some(function (edge) {
      return edge.source === graph.root.id || edge.target === graph.root.id;
    });
  }

  function elkNode(state, nodes) {
    var name = nameOf(state), invokes = invokesOf(state);
    var headWidth = Math.max(widthOf(name, NAME_CHAR) + 24, widthOf(invokes, SMALL_CHAR) + 16, 64);
    // A state's own loops (targetless transitions above all) spread round its sides, not stacked on one.
    var node = { id: state.id, layoutOptions: {
      "elk.layered.edgeRouting.selfLoopDistribution": "EQUALLY",
      "elk.layered.edgeRouting.selfLoopOrdering": "SEQUENCED",
    } };
    nodes.set(state.id, state);
    if (state.children.length) {
      node.children = state.children.map(function (child) { return elkNode(child, nodes); });
      node.layoutOptions["elk.padding"] = "[top=" + (invokes ? 38 : 26) + ",left=10,bottom=10,right=10]";
      node.layoutOptions["elk.nodeSize.constraints"] = "MINIMUM_SIZE";
      node.layoutOptions["elk.nodeSize.minimum"] = "(" + headWidth + ", 40)";
    } else {
      node.width = headWidth;
      node.height = invokes ? 40 : 28;
    }
    return node;
  }

  /** The machine's graph as an ELK graph: ids are XState state ids; edge i is the graph's edge i. */
  function elkGraph(graph) {
    var nodes = new Map();
    var top = drawsRootBox(graph) ? [elkNode(graph.root, nodes)] : graph.root.children.map(function (child) {
      return elkNode(child, nodes);
    });
    return {
      nodes: nodes,
      elk: {
        id: "conclave-diagram-root",
        layoutOptions: {
          "elk.algorithm": "layered",
          "elk.direction": "DOWN",
          "elk.hierarchyHandling": "INCLUDE_CHILDREN",
          "elk.layered.spacing.nodeNodeBetweenLayers": "34",
          "elk.spacing.nodeNode": "22",
          "elk.spacing.edgeLabel": "3",
          "elk.spacing.edgeNode": "14",
          "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
          "elk.json.shapeCoords": "ROOT",
          "elk.json.edgeCoords": "ROOT",
          "elk.padding": "[top=6,left=6,bottom=6,right=6]",
        },
        children: top,
        edges: graph.edges.map(function (edge, index) {
          return {
            id: "e" + index,
            sources: [edge.source],
            targets: [edge.target],
            labels: [{ text: edge.label, width: widthOf(edge.label, SMALL_CHAR) + 6, height: LABEL_HEIGHT }],
          };
        }),
      },
    };
  }

  function drawNode(laid, states, parent, into, initialId) {
    var state = states.get(laid.id);
    var group = shape("g", { "class": "dnode kind-" + state.kind + (laid.id === initialId ? " initial" : "") }, parent);
    group.dataset.statePath = state.path.join(".");
    group.dataset.stateId = state.id;
    shape("rect", { "class": "box", x: laid.x, y: laid.y, width: laid.width, height: laid.height, rx: state.kind === "history" ? 14 : 7 }, group);
    if (state.kind === "final")
      shape("rect", { "class": "inner", x: laid.x + 3, y: laid.y + 3, width: laid.width - 6, height: laid.height - 6, rx: 5 }, group);
    var compound = !!(laid.children && laid.children.length);
    var nameY = compound ? laid.y + 16 : laid.y + (state.invokes.length ? 16 : laid.height / 2 + 4.5);
    var nameX = compound ? laid.x + 9 : laid.x + laid.width / 2;
    words("text", { "class": "name", x: nameX, y: nameY, "text-anchor": compound ? "start" : "middle" },
      (laid.id === initialId ? "\u25b8 " : "") + nameOf(state) + (state.kind === "parallel" ? "  \u2225" : ""), group);
    if (state.invokes.length)
      words("text", { "class": "invokes", x: nameX, y: nameY + 14, "text-anchor": compound ? "start" : "middle" }, invokesOf(state), group);
    into.set(state.path.join("."), group);
    (laid.children || []).forEach(function (child) { drawNode(child, states, group, into, state.initial); });
  }

  function pathData(laid, from, to) {
    var sections = laid.sections || [];
    if (!sections.length) {
      // ELK routes every edge; a straight line is the fallback should it not.
      return "M" + (from.x + from.width / 2) + "," + (from.y + from.height) + " L" + (to.x + to.width / 2) + "," + to.y;
    }
    return sections.map(function (section) {
      var points = [section.startPoint].concat(section.bendPoints || [], [section.endPoint]);
      return points.map(function (point, i) { return (i ? "L" : "M") + point.x + "," + point.y; }).join(" ");
    }).join(" ");
  }

  /** Lays the graph out and draws it into container; resolves to { nodes: Map(path → g), edges: [{ edge, path, label }] }. */
  function draw(graph, container) {
    if (!elk) return Promise.reject(new Error("the layout library did not load: the viewer needs the optional package elkjs, npm install elkjs"));
    var built = elkGraph(graph);
    if (!layouts.has(graph)) layouts.set(graph, elk.layout(built.elk));
    return layouts.get(graph).then(function (laid) {
      var id = "conclave-arrow-" + drawn++;
      var width = Math.ceil(laid.width), height = Math.ceil(laid.height);
      var svg = shape("svg", { "class": "statechart", width: width, height: height, viewBox: "0 0 " + width + " " + height });
      // Fitted to its box, width and height (never drawn larger than laid out); "actual size" shows it
      // unscaled, scrolling in its box, for labels too small to read.
      var toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "fit-toggle";
      var fit = function (fitted) {
        container.classList.toggle("actual", !fitted);
        svg.style.width = fitted ? "min(" + width + "px, 100%)" : width + "px";
        toggle.textContent = fitted ? "actual size" : "fit";
        toggle.title = fitted ? "show the diagram unscaled (it scrolls)" : "fit the diagram to its box";
      };
      toggle.addEventListener("click", function () { fit(container.classList.contains("actual")); });
      var defs = shape("defs", {}, svg);
      ["", "-taken"].forEach(function (suffix) {
        var marker = shape("marker", { id: id + suffix, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, defs);
        shape("path", { d: "M0,0 L10,5 L0,10 z", "class": "arrowhead" + suffix }, marker);
      });
      var nodes = new Map();
      var boxes = shape("g", { "class": "dnodes" }, svg);
      var flat = new Map();
      (function index(node) { flat.set(node.id, node); (node.children || []).forEach(index); })(laid);
      (laid.children || []).forEach(function (child) { drawNode(child, built.nodes, boxes, nodes, graph.root.initial); });
      var lines = shape("g", { "class": "dedges" }, svg);
      var edges = laid.edges.map(function (laidEdge, index) {
        var edge = graph.edges[index];
        var group = shape("g", { "class": "dedge kind-" + edge.kind + (edge.targetless ? " targetless" : "") }, lines);
        group.dataset.edge = String(index);
        group.dataset.source = edge.source;
        group.dataset.target = edge.target;
        group.dataset.label = edge.label;
        var path = shape("path", { "class": "line", d: pathData(laidEdge, flat.get(edge.source), flat.get(edge.target)),
          "marker-end": "url(#" + id + ")" }, group);
        path.dataset.marker = id;
        var label = (laidEdge.labels || [])[0];
        if (label && label.x !== undefined) {
          shape("rect", { "class": "label-bg", x: label.x - 1, y: label.y, width: label.width + 2, height: label.height, rx: 3 }, group);
          words("text", { "class": "label", x: label.x + 2, y: label.y + label.height - 3 }, edge.label, group);
        }
        return { edge: edge, group: group, path: path };
      });
      container.textContent = "";
      container.appendChild(svg);
      container.appendChild(toggle);
      fit(true);
      return { nodes: nodes, edges: edges };
    });
  }

  window.conclaveDiagram = { draw: draw, elkGraph: elkGraph };
})();
`;

/** The diagram's look: boxes, edges, and the live and just-taken highlights. */
export const DIAGRAM_STYLE = `
  .graph { flex: 1; min-width: 0; max-height: var(--fit-height, 85vh); overflow: auto; position: relative; }
  .graph .note { color: #9a6700; font-size: 12px; }
  svg.statechart { display: block; height: auto; max-height: var(--fit-height, 85vh); font: 12px system-ui, -apple-system, "Segoe UI", sans-serif; }
  .graph.actual svg.statechart { max-height: none; }
  .graph .fit-toggle { position: absolute; top: 2px; right: 2px; font-size: 11px; padding: 0 6px; opacity: .75; }
  .dnode > .box { fill: #fff; stroke: #8c959f; stroke-width: 1.4; }
  .dnode.kind-compound > .box, .dnode.kind-parallel > .box { fill: #f6f8fa; }
  .dnode.kind-parallel > .dnode > .box { stroke-dasharray: 5 3; }
  .dnode.kind-final > .box, .dnode.kind-final > .inner { fill: none; stroke: #57606a; }
  .dnode.kind-history > .name { font-style: italic; }
  .dnode > .name { font-weight: 600; fill: #1f2328; }
  .dnode > .invokes { font-size: 10.5px; fill: #6e7781; }
  .dnode.active > .box { fill: #dafbe1; stroke: #1a7f37; stroke-width: 3; }
  .dnode.kind-compound.active > .box, .dnode.kind-parallel.active > .box { fill: #f0fff4; }
  .dnode.last > .box { stroke: #1a7f37; stroke-width: 2.5; stroke-dasharray: 6 3; }
  .dnode.waiting > .box { fill: #fff8c5; stroke: #bf8700; stroke-width: 3; }
  .dedge > .line { fill: none; stroke: #6e7781; stroke-width: 1.2; }
  .dedge.kind-after > .line { stroke: #9a6700; stroke-dasharray: 4 2; }
  .dedge.kind-invokeError > .line { stroke: #cf222e; }
  .dedge.kind-always > .line { stroke-dasharray: 2 2; }
  .dedge > .label-bg { fill: #fff; fill-opacity: .85; }
  .dedge > .label { font-size: 10.5px; fill: #0969da; }
  .dedge.kind-after > .label { fill: #9a6700; }
  .dedge.kind-invokeError > .label { fill: #cf222e; }
  .dedge.taken > .line { stroke: #1a7f37; stroke-width: 3; stroke-dasharray: none; }
  .dedge.taken > .label { fill: #1a7f37; }
  .arrowhead { fill: #6e7781; }
  .arrowhead-taken { fill: #1a7f37; }
  details.cards > summary { cursor: pointer; color: #57606a; font-size: 12px; margin: 6px 0; }
`;

/**
 * A reader of the DOT subset the writer emits: statements one per line,
 * quoted ids, clusters nested with braces. Throws on anything else.
 */
export interface DotGraph {
  name: string;
  nodes: Map<string, { attributes: Record<string, string>; cluster: string | null }>;
  clusters: Map<string, { parent: string | null; attributes: Record<string, string> }>;
  edges: { from: string; to: string; attributes: Record<string, string>; cluster: string | null }[];
}

const QUOTED = '"(?:[^"\\\\]|\\\\.)*"';
const unquote = (text: string) => JSON.parse(text) as string;

function attributesOf(list: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (!list) return attributes;
  const pattern = new RegExp(`\\s*(\\w+)=(${QUOTED}|[\\w.#]+)\\s*(,|$)`, "y");
  let at = 0;
  while (at < list.length) {
    pattern.lastIndex = at;
    const m = pattern.exec(list);
    if (!m) throw new Error(`bad attribute list: [${list}] at ${at}`);
    attributes[m[1]!] = m[2]!.startsWith('"') ? unquote(m[2]!) : m[2]!;
    at = pattern.lastIndex;
  }
  return attributes;
}

export function readDot(text: string): DotGraph {
  const lines = text.trimEnd().split("\n");
  const head = lines[0]?.match(new RegExp(`^digraph (${QUOTED}) \\{$`));
  if (!head) throw new Error(`first line is not 'digraph "…" {': ${lines[0]}`);
  if (lines.at(-1) !== "}") throw new Error("the graph is not closed");
  const graph: DotGraph = { name: unquote(head[1]!), nodes: new Map(), clusters: new Map(), edges: [] };
  const stack: string[] = [];
  const cluster = () => stack.at(-1) ?? null;
  const rules: [RegExp, (m: RegExpMatchArray) => void][] = [
    [
      new RegExp(`^subgraph (${QUOTED}) \\{$`),
      (m) => {
        const name = unquote(m[1]!);
        if (!name.startsWith("cluster_")) throw new Error(`subgraph ${name} is not a cluster`);
        graph.clusters.set(name, { parent: cluster(), attributes: {} });
        stack.push(name);
      },
    ],
    [
      /^\}$/,
      () => {
        if (!stack.pop()) throw new Error("'}' closes nothing");
      },
    ],
    [
      new RegExp(`^(${QUOTED}) -> (${QUOTED})(?: \\[(.*)\\])?;$`),
      (m) => {
        graph.edges.push({
          from: unquote(m[1]!),
          to: unquote(m[2]!),
          attributes: attributesOf(m[3]),
          cluster: cluster(),
        });
      },
    ],
    [
      new RegExp(`^(${QUOTED}) \\[(.*)\\];$`),
      (m) => {
        const id = unquote(m[1]!);
        if (graph.nodes.has(id)) throw new Error(`node ${id} declared twice`);
        graph.nodes.set(id, { attributes: attributesOf(m[2]), cluster: cluster() });
      },
    ],
    [
      /^(\w+)=(.+);$/,
      (m) => {
        const owner = cluster();
        if (owner) Object.assign(graph.clusters.get(owner)!.attributes, attributesOf(`${m[1]}=${m[2]}`));
      },
    ],
    [/^(node|edge) \[.*\];$/, () => {}],
  ];
  for (const raw of lines.slice(1, -1)) {
    const line = raw.trim();
    const rule = rules.find(([pattern]) => pattern.test(line));
    if (!rule) throw new Error(`not a DOT statement the writer emits: '${raw}'`);
    rule[1](line.match(rule[0])!);
  }
  if (stack.length > 0) throw new Error(`unclosed subgraph(s): ${stack.join(", ")}`);
  for (const edge of graph.edges)
    for (const end of [edge.from, edge.to])
      if (!graph.nodes.has(end)) throw new Error(`edge to undeclared node ${end}`);
  return graph;
}

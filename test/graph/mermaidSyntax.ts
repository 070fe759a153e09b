/**
 * A line-by-line reader of the Mermaid stateDiagram-v2 subset the writer
 * emits, strict about what Mermaid's own lexer would misread (ids limited to
 * [A-Za-z0-9_] and not keywords; transition text free of `:`, `;` and `#`).
 * Throws on any line it does not recognise.
 */
export interface MermaidDiagram {
  /** id → label and enclosing composite (null at the top level). */
  states: Map<string, { label: string; parent: string | null; composite: boolean }>;
  edges: { from: string; to: string; label: string | null; parent: string | null }[];
}

const ID = "[A-Za-z0-9_]+";
const END = `${ID}|\\[\\*\\]`;
const KEYWORD = /^(default.*|state|note|class|classdef|scale|direction|end|hide|acctitle|accdescr|statediagram.*)$/i;

export function readMermaid(text: string): MermaidDiagram {
  const lines = text.trimEnd().split("\n");
  if (lines[0] !== "stateDiagram-v2") throw new Error(`first line is '${lines[0]}', not stateDiagram-v2`);
  const states: MermaidDiagram["states"] = new Map();
  const edges: MermaidDiagram["edges"] = [];
  const stack: string[] = [];
  const parent = () => stack.at(-1) ?? null;
  const declare = (id: string, label: string, composite: boolean) => {
    if (KEYWORD.test(id)) throw new Error(`id '${id}' is a Mermaid keyword`);
    if (states.has(id)) throw new Error(`state '${id}' declared twice`);
    states.set(id, { label, parent: parent(), composite });
  };
  const rules: [RegExp, (m: RegExpMatchArray) => void][] = [
    [
      new RegExp(`^state "([^"]+)" as (${ID})\\{$`),
      (m) => {
        declare(m[2]!, m[1]!, true);
        stack.push(m[2]!);
      },
    ],
    [
      new RegExp(`^state (${ID}) \\{$`),
      (m) => {
        declare(m[1]!, m[1]!, true);
        stack.push(m[1]!);
      },
    ],
    [
      /^\}$/,
      () => {
        if (!stack.pop()) throw new Error("'}' closes nothing");
      },
    ],
    [
      /^--$/,
      () => {
        if (stack.length === 0) throw new Error("'--' outside a composite state");
      },
    ],
    [new RegExp(`^state "([^"]+)" as (${ID})$`), (m) => declare(m[2]!, m[1]!, false)],
    [new RegExp(`^(${ID})$`), (m) => declare(m[1]!, m[1]!, false)],
    [
      new RegExp(`^(${END}) --> (${END})(?: : ([^:;#]+))?$`),
      (m) => {
        edges.push({ from: m[1]!, to: m[2]!, label: m[3] ?? null, parent: parent() });
      },
    ],
    [/^classDef \w+ [^\n]+$/, () => {}],
    [/^class \w+(,\w+)* \w+$/, () => {}],
  ];
  for (const [index, raw] of lines.slice(1).entries()) {
    const line = raw.trim();
    const rule = rules.find(([pattern]) => pattern.test(line));
    if (!rule) throw new Error(`line ${index + 2} is not valid here: '${raw}'`);
    rule[1](line.match(rule[0])!);
  }
  if (stack.length > 0) throw new Error(`unclosed composite state(s): ${stack.join(", ")}`);
  for (const edge of edges)
    for (const end of [edge.from, edge.to])
      if (end !== "[*]" && !states.has(end)) throw new Error(`edge mentions undeclared state '${end}'`);
  return { states, edges };
}

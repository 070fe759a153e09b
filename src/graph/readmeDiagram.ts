import { MACHINES } from "../../machines/index.ts";
import { renderMachine } from "./formats.ts";

/**
 * The README embeds the turn machine's Mermaid diagram between two markers;
 * `npm run diagram` regenerates it and a test fails when it is stale.
 */
export const DIAGRAM_START = "<!-- turn-diagram:start -->";
export const DIAGRAM_END = "<!-- turn-diagram:end -->";

/** What belongs between the markers: the generated diagram in a mermaid code block. */
export function turnDiagramBlock(): string {
  const turn = MACHINES.turn;
  if (!turn) throw new Error("machines/index.ts has no 'turn' machine");
  return `\n\`\`\`mermaid\n${renderMachine(turn, "mermaid")}\`\`\`\n`;
}

/** The text between the markers, or null when the README lacks them. */
export function currentDiagramBlock(readme: string): string | null {
  const start = readme.indexOf(DIAGRAM_START);
  const end = readme.indexOf(DIAGRAM_END);
  if (start < 0 || end < start) return null;
  return readme.slice(start + DIAGRAM_START.length, end);
}

/** The README with `block` between the markers. */
export function withDiagramBlock(readme: string, block: string): string {
  const start = readme.indexOf(DIAGRAM_START);
  const end = readme.indexOf(DIAGRAM_END);
  if (start < 0 || end < start) throw new Error(`the README needs ${DIAGRAM_START} … ${DIAGRAM_END} markers`);
  return `${readme.slice(0, start + DIAGRAM_START.length)}${block}${readme.slice(end)}`;
}

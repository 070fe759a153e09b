// `npm run diagram`: rewrites the turn statechart's Mermaid block in README.md.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../nats/server.ts";
import { currentDiagramBlock, turnDiagramBlock, withDiagramBlock } from "./readmeDiagram.ts";

const path = join(REPO_ROOT, "README.md");
const readme = readFileSync(path, "utf8");
const block = turnDiagramBlock();
if (currentDiagramBlock(readme) === block) {
  console.log("README.md: the turn diagram is up to date");
} else {
  writeFileSync(path, withDiagramBlock(readme, block));
  console.log("README.md: turn diagram rewritten");
}

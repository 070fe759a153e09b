/**
 * The layer order (floors) of Conclave, checked by `npm run lint` (docs/architecture.md).
 * A file may import its own floor or any lower floor, never a higher one; type-only imports count.
 * Each floor is a list of path patterns, lowest first; one rule per floor forbids importing above it.
 */
const FLOORS = [
  {
    label: "base",
    paths: [
      "^src/(errors|deadline|optionalPackages|optionalFeatures|version)\\.ts$",
      "^src/(contracts|stores|cognition)/",
    ],
  },
  { label: "config", paths: ["^src/(config|telemetry)/"] },
  { label: "bus", paths: ["^src/(bus|nats)/"] },
  { label: "eventlog", paths: ["^src/eventlog/"] },
  {
    label: "domains",
    paths: [
      "^(machines|agents)/",
      "^src/(agents|a2a|blackboard|context|cost|ledgers|llm|memory|skills|recipes|tools|verify|schedules|knowledge)/",
    ],
  },
  { label: "runtime", paths: ["^src/runtime/"] },
  { label: "workers", paths: ["^src/workers/"] },
  { label: "client", paths: ["^src/client/"] },
  { label: "views", paths: ["^src/(viewer|inspect|graph)/"] },
  { label: "gateway", paths: ["^src/gateway/"] },
  { label: "cli", paths: ["^src/(cli|chat)/"] },
  { label: "entries", paths: ["^src/(index|worker|recipes)\\.ts$"] },
];

/** `floor-<n>-<label>`: a file of that floor imports one of a higher floor. */
const floorRules = FLOORS.slice(0, -1).map((floor, n) => ({
  name: `floor-${n}-${floor.label}`,
  comment: `A ${floor.label} file (floor ${n}) imports from a higher floor: move the shared piece down (docs/architecture.md).`,
  severity: "error",
  from: { path: floor.paths },
  to: { path: FLOORS.slice(n + 1).flatMap((higher) => higher.paths) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...floorRules,
    {
      name: "client-bundle",
      comment: "The client (conclave/client) must not pull in the runtime, the workers, the gateway or the CLI.",
      severity: "error",
      from: { path: "^src/client/" },
      to: { path: "^src/(runtime|workers|gateway|cli)/", reachable: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};

import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { stateKey } from "../../machines/recipe/frame.ts";
import { compileRecipe } from "../../machines/recipe/index.ts";
import type { JsonObject } from "../contracts/recipeRun.ts";
import { messageOf } from "../errors.ts";
import { allStates, type MachineGraph, machineGraph } from "../graph/machineGraph.ts";
import type { InspectionRecord, SnapshotRecord } from "../inspect/record.ts";
import { loadRecipe } from "../recipes/load.ts";
import type { ActorUpdate } from "./liveActors.ts";
import type { TurnEventLike } from "./turnEventFeed.ts";

/** The id every compiled recipe machine has (machines/recipe/compile.ts). */
export const RECIPE_MACHINE_ID = "recipe";

/** One recipe's diagram, as the page is sent it. */
export interface RecipeDiagram {
  /** The page's key for it, and the `machine` of its actors' updates: `recipe:<name>@<hash of its graph>`. */
  key: string;
  recipe: string;
  version?: string;
  shape: "graph" | "workflow";
  graph: MachineGraph;
  /** The states that are the recipe's nodes: state path → the node's id and kind. */
  nodes: Record<string, { id: string; kind: string }>;
}

export interface TurnRef {
  session_id: string;
  turn_id: number;
}

export interface RecipeDiagramsOptions {
  /** The recipe document a turn runs: its RECIPE_STARTED's, read from the event log; null if it is not (yet) there. */
  readDocument: (turn: TurnRef) => Promise<JsonObject | null>;
  /** A recipe drawn for the first time (or again, after being forgotten). */
  onDiagram: (diagram: RecipeDiagram) => void;
  /** A diagram no longer kept (more than `maxDiagrams`). */
  onForget: (key: string) => void;
  /** A recipe actor's records, once its diagram is known: `machine` names the diagram (its key). */
  onRecord: (record: InspectionRecord) => void;
  warn: (message: string) => void;
  /** Waits between looks for a turn's RECIPE_STARTED (the log may be written after the actor starts). */
  retryDelaysMs?: number[];
  maxDiagrams?: number;
  /** Recipe actors waiting for their diagram. */
  maxPending?: number;
}

interface Pending {
  actor: InspectionRecord;
  snapshots: SnapshotRecord[];
  looking: boolean;
}

const MAX_BUFFERED_SNAPSHOTS = 200;
const MAX_STARTED_KEPT = 500;

/**
 * Gives the viewer a diagram for each recipe a run is seen running. A recipe
 * machine's actor (machine id "recipe") is held back until its recipe is
 * known: the turn it runs is in its snapshot's context (session_id,
 * turn_id), and that turn's RECIPE_STARTED (seen on the live event feed, or
 * read from the event log) holds the document, which is loaded and compiled
 * as the runner did and drawn. Its records then go on with `machine` set to
 * the diagram's key, so the page lights up that recipe's states.
 */
export class RecipeDiagrams {
  readonly #options: RecipeDiagramsOptions;
  readonly #pending = new Map<string, Pending>();
  /** RECIPE_STARTED documents seen live, by `session/turn`. */
  readonly #started = new Map<string, JsonObject>();
  /** Compiled diagrams by document (its JSON), most recently used last. */
  readonly #byDocument = new Map<string, RecipeDiagram>();
  /** Diagrams the page has, by key, most recently used last. */
  readonly #diagrams = new Map<string, RecipeDiagram>();
  readonly #stop = new AbortController();

  constructor(options: RecipeDiagramsOptions) {
    this.#options = options;
  }

  /** The diagrams drawn so far, for a page opened now. */
  diagrams(): RecipeDiagram[] {
    return [...this.#diagrams.values()];
  }

  /** Notes a turn event from the live feed: a RECIPE_STARTED saves reading the log. */
  noteEvent(event: TurnEventLike): void {
    if (event.kind !== "RECIPE_STARTED") return;
    const document = (event.payload as { document?: unknown } | undefined)?.document;
    if (!isObject(document)) return;
    this.#started.set(turnKey(event), document);
    if (this.#started.size > MAX_STARTED_KEPT) this.#started.delete(this.#started.keys().next().value!);
  }

  /**
   * Takes the records of recipe actors whose diagram is not known yet (true),
   * and leaves every other record to the caller (false).
   */
  offer(record: InspectionRecord): boolean {
    if (record.kind === "actor") {
      if (record.machine !== RECIPE_MACHINE_ID) return false;
      this.#pending.set(record.session, { actor: record, snapshots: [], looking: false });
      const max = this.#options.maxPending ?? 1_000;
      if (this.#pending.size > max) this.#pending.delete(this.#pending.keys().next().value!);
      return true;
    }
    const pending = this.#pending.get(record.session);
    if (!pending) return false;
    if (record.kind !== "snapshot") return true;
    pending.snapshots.push(record);
    if (pending.snapshots.length > MAX_BUFFERED_SNAPSHOTS) pending.snapshots.splice(1, 1);
    if (!pending.looking) {
      const turn = turnOf(record.snapshot.context);
      if (turn) {
        pending.looking = true;
        void this.#resolve(record.session, pending, turn);
      }
    }
    return true;
  }

  /** Where a recipe actor waits, from its snapshot: the path of its human node's state, once suspended. */
  describe = (machine: string, snapshot: SnapshotRecord["snapshot"]): Partial<Pick<ActorUpdate, "waiting">> | null => {
    const diagram = this.#diagrams.get(machine);
    if (!diagram) return null;
    const at = (snapshot.context as { suspended_at?: unknown } | undefined)?.suspended_at;
    if (typeof at !== "string") return null;
    const path = Object.entries(diagram.nodes).find(([, node]) => node.id === at)?.[0];
    return path ? { waiting: path } : null;
  };

  close(): void {
    this.#stop.abort();
    this.#pending.clear();
  }

  async #resolve(session: string, pending: Pending, turn: TurnRef): Promise<void> {
    const delays = this.#options.retryDelaysMs ?? [250, 500, 1_000, 2_000, 4_000];
    let document: JsonObject | null = null;
    let problem = "no RECIPE_STARTED in its log";
    for (let attempt = 0; attempt <= delays.length && !document; attempt++) {
      if (attempt > 0) await sleep(delays[attempt - 1], undefined, { signal: this.#stop.signal }).catch(() => {});
      if (this.#stop.signal.aborted || this.#pending.get(session) !== pending) return;
      document = this.#started.get(turnKey(turn)) ?? null;
      if (document) break;
      try {
        document = await this.#options.readDocument(turn);
      } catch (error) {
        problem = messageOf(error);
      }
    }
    if (this.#pending.get(session) !== pending) return;
    this.#pending.delete(session);
    const where = `turn ${turn.session_id}/${turn.turn_id}`;
    if (!document) return this.#options.warn(`no diagram for the recipe of ${where}: ${problem}`);
    let diagram: RecipeDiagram;
    try {
      diagram = this.#diagramOf(document);
    } catch (error) {
      return this.#options.warn(`no diagram for the recipe of ${where}: ${messageOf(error)}`);
    }
    this.#show(diagram);
    this.#options.onRecord({ ...pending.actor, machine: diagram.key } as InspectionRecord);
    for (const snapshot of pending.snapshots) this.#options.onRecord(snapshot);
  }

  #diagramOf(document: JsonObject): RecipeDiagram {
    const text = JSON.stringify(document);
    const known = this.#byDocument.get(text);
    if (known) {
      this.#byDocument.delete(text);
      this.#byDocument.set(text, known);
      return known;
    }
    // The runner ran it, with a handler for each logic step: the viewer only draws it.
    const steps = (document.workflow as { steps?: unknown } | undefined)?.steps;
    const recipe = loadRecipe(document, { logicHandlers: isObject(steps) ? Object.keys(steps) : [] });
    const graph = machineGraph(compileRecipe(recipe));
    const kinds = new Map(recipe.nodes.map((node) => [`node-${stateKey(node.id)}`, node]));
    const nodes: RecipeDiagram["nodes"] = {};
    for (const state of allStates(graph.root)) {
      const node = kinds.get(state.id);
      if (node) nodes[state.path.join(".")] = { id: node.id, kind: node.kind };
    }
    const hash = createHash("sha256").update(JSON.stringify(graph)).digest("hex").slice(0, 10);
    const diagram: RecipeDiagram = {
      key: `recipe:${recipe.name}@${hash}`,
      recipe: recipe.name,
      ...(recipe.version ? { version: recipe.version } : {}),
      shape: recipe.shape,
      graph,
      nodes,
    };
    this.#byDocument.set(text, diagram);
    if (this.#byDocument.size > 64) this.#byDocument.delete(this.#byDocument.keys().next().value!);
    return diagram;
  }

  #show(diagram: RecipeDiagram): void {
    const shown = this.#diagrams.get(diagram.key);
    this.#diagrams.delete(diagram.key);
    this.#diagrams.set(diagram.key, shown ?? diagram);
    if (shown) return;
    this.#options.onDiagram(diagram);
    const max = this.#options.maxDiagrams ?? 24;
    while (this.#diagrams.size > max) {
      const oldest = this.#diagrams.keys().next().value!;
      this.#diagrams.delete(oldest);
      this.#options.onForget(oldest);
    }
  }
}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const turnKey = (turn: TurnRef) => `${turn.session_id}/${turn.turn_id}`;

/** The turn a recipe actor runs, from its snapshot's context. */
function turnOf(context: unknown): TurnRef | null {
  if (!isObject(context)) return null;
  const { session_id, turn_id } = context;
  return typeof session_id === "string" && typeof turn_id === "number" ? { session_id, turn_id } : null;
}

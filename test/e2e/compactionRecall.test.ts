/**
 * Memory stays reachable after compaction (issue 38, item 2), over the real
 * memory path: a runner and a worker hosting the agents and the memory
 * service, on a real nats-server, offline. A 34-turn conversation on a small
 * context budget compacts at least twice; turn 3 told memory about the cat.
 * The compactions fold in every turn of the conversation, read from memory
 * (not only the three episodes a retrieval brings back), and when the last
 * turn asks about the cat, memory recalls turn 3 and the agents are given it,
 * although the summary's cut-off is long past it.
 *
 * The summary holds the user's words, so the session's snapshot (a KV key
 * rewritten every turn, whose superseded revisions outlive an erase) keeps
 * only a reference to it: once the session is erased, a word of a turn that
 * a summary held is nowhere in the store directory.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Subscription } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultTurnPolicy } from "../../machines/turn/index.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { isRetrievedRefs } from "../../src/contracts/memory.ts";
import { replayTape } from "../../src/runtime/checkpoints/tape.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { storedSnapshot } from "../../src/runtime/sessionSummary.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const nats = useNatsServer();
useInProcessStack(nats, {
  policy: { ...defaultTurnPolicy, context: { budget: { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 700 } } },
});

const SESSION = "compaction-recall";
const FORK = "compaction-recall-fork";
const CAT = "My cat is called Zephyrine and she sleeps on the piano.";
const QUESTION = "Do you remember my cat Zephyrine, the one who sleeps on the piano?";
/** Turn 29's first sentence: the summaries of the last turns hold it (older lines are given up to the bound). */
const CANARY = "canary-summary-4b7e90";
const FILLER =
  "The weather keeps changing, the garden needs watering, the fence wants paint and the shopping list grows longer every single day";

/**
 * Turn `turn`'s message: a first sentence of its own; from turn 16, a long tail (the turns memory brings
 * back then press on the budget), so the first compaction comes when some fifteen turns wait to be folded in.
 */
const message = (turn: number) =>
  turn === 3
    ? CAT
    : `${turn === 29 ? `My code word is ${CANARY}.` : `Today is day ${turn} of my routine.`} ${turn < 16 ? "" : `${`${FILLER}, `.repeat(6)}and so on.`}`;

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The files of the JetStream store directory holding `text`. */
const filesHolding = (text: string) =>
  filesUnder(nats.storeDir).filter((file) => readFileSync(file).includes(Buffer.from(text)));

let client: ConclaveClient;
/** The episodes each agent request of the session carried, by turn: what the agents were given. */
const agentEpisodes = new Map<number, { turn_id: number; user_text: string }[][]>();
let watch: Subscription;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  // The agents' requests, as a worker receives them (a plain subscription gets a copy of each).
  watch = (await nats.connect("worker")).subscribe(subjects.agent(">"));
  void (async () => {
    for await (const msg of watch) {
      try {
        const request = JSON.parse(new TextDecoder().decode(msg.data)) as {
          session_id?: string;
          turn_id?: number;
          context?: { episodes?: { turn_id: number; user_text: string }[] };
        };
        if (request.session_id !== SESSION || request.turn_id === undefined || !request.context?.episodes) continue;
        const seen = agentEpisodes.get(request.turn_id) ?? [];
        seen.push(request.context.episodes);
        agentEpisodes.set(request.turn_id, seen);
      } catch {
        // not an agent request (a stream part, a roll call)
      }
    }
  })();
});
afterAll(() => watch?.unsubscribe());

async function say(text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(SESSION, text)) events.push(event);
  return events;
}

describe("compaction keeps memory reachable", () => {
  it("folds the whole conversation into its summaries and still gives the agents the early turn memory recalls", async () => {
    const turns: EngineEvent[][] = [];
    for (let turn = 1; turn <= 33; turn += 1) turns.push(await say(message(turn)));
    const last = await say(QUESTION);
    const all = [...turns.flat(), ...last];
    for (const events of [...turns, last]) {
      const completed = events.find((event) => event.kind === "TURN_COMPLETED");
      expect(completed?.kind === "TURN_COMPLETED" && completed.payload.outcome.status).not.toBe("Failed");
    }

    // At least two compactions, and together they fold in every turn from the first on, each once: the
    // conversation as memory stores it, not the three episodes one retrieval brought back.
    const compactions = all.flatMap((event) => (event.kind === "CONTEXT_COMPACTED" ? [event] : []));
    expect(compactions.length).toBeGreaterThanOrEqual(2);
    expect(compactions[0]!.payload.turns_compacted.length).toBeGreaterThan(3);
    expect(compactions[0]!.payload.turns_compacted).toContain(3);
    const folded = compactions.flatMap((event) => event.payload.turns_compacted);
    const through = compactions.at(-1)!.payload.through_turn;
    expect(through).toBeGreaterThan(20);
    expect(folded).toEqual(Array.from({ length: through }, (_, index) => index + 1));

    // The last turn: memory recalls turn 3, long before the summary's cut-off, and the agents are given it.
    const retrieved = last.find((event) => event.kind === "MEMORY_RETRIEVED");
    if (retrieved?.kind !== "MEMORY_RETRIEVED" || !isRetrievedRefs(retrieved.payload)) throw new Error("no retrieval");
    expect(retrieved.payload.refs.episodes).toContain(3);
    const planned = last.find((event) => event.kind === "CONTEXT_PLANNED");
    if (planned?.kind !== "CONTEXT_PLANNED") throw new Error("no plan");
    expect(planned.payload.zones.recall.kept).toContain("episode:3");
    const lastTurn = last[0]!.turn_id;
    const given = agentEpisodes.get(lastTurn) ?? [];
    expect(given.length).toBeGreaterThan(0);
    for (const episodes of given) expect(episodes.find((episode) => episode.turn_id === 3)?.user_text).toBe(CAT);

    // The snapshot keeps the summary by reference (the turn whose CONTEXT_COMPACTED holds it), not its text;
    // a runner loading the session reads the text back from the log.
    const nc = await nats.connect("runner");
    const sessions = await SessionStore.open(nc);
    // (With the zones' adaptation, when a zone was starved: adaptiveZones.test.ts covers it.)
    const arena = (await sessions.snapshot(SESSION))?.context_arena;
    const { zones: _zones, ...stored } = arena ?? {};
    expect(stored).toEqual({
      summary: { through_turn: through, compacted_in: compactions.at(-1)!.turn_id },
      observed_tokens: 0,
      compactions: compactions.length,
    });
    expect((await sessions.loadSnapshot(SESSION))?.context_arena?.summary?.text).toBe(
      compactions.at(-1)!.payload.summary,
    );
    // The arena the session carries on is the one a fold of its log rebuilds: a fork or a replay compacts as
    // the live session does.
    const clients = { js: jetstream(nc), jsm: await jetstreamManager(nc) };
    const rebuilt = await replayTape(clients, sessions, SESSION, "start");
    expect(storedSnapshot(rebuilt.state.session).context_arena).toEqual(arena);

    // A fork carries the summary on: its snapshot names its own SESSION_FORKED, which holds the text.
    await client.fork({ session: SESSION, at: { turn: lastTurn }, as: FORK });
    const forked = await sessions.snapshot(FORK);
    expect(forked?.context_arena?.summary).toEqual({ through_turn: through, compacted_in: lastTurn });
    expect((await sessions.loadSnapshot(FORK))?.context_arena?.summary?.text).toBe(compactions.at(-1)!.payload.summary);

    // Erased, the session and its fork leave no word of a turn a summary held anywhere on disk.
    expect(compactions.some((event) => event.payload.summary.includes(CANARY))).toBe(true);
    expect(filesHolding(CANARY).length).toBeGreaterThan(0);
    await client.erase(SESSION, { with_forks: true, requested_by: "compaction-recall" });
    expect(filesHolding(CANARY)).toEqual([]);
  }, 120_000);
});

import type { InProcessPipeline } from "./inprocess.ts";

export interface Parity {
  turns: number;
  identical: number;
  /** The first turn whose replies differ, if any. */
  firstDifference?: { turn: number; text: string; replies: string[] };
}

/**
 * Checks that pipelines built on different runtimes compute the same turn:
 * one session each, the same messages in the same order, replies compared
 * turn by turn (the offline model is deterministic).
 */
export async function checkParity(pipelines: InProcessPipeline[], texts: string[], rounds = 2): Promise<Parity> {
  const parity: Parity = { turns: 0, identical: 0 };
  for (let turn = 0; turn < texts.length * rounds; turn++) {
    const text = texts[turn % texts.length]!;
    const replies: string[] = [];
    for (const pipeline of pipelines) replies.push((await pipeline.runTurn("parity", text)).response);
    parity.turns++;
    if (replies.every((reply) => reply === replies[0])) parity.identical++;
    else parity.firstDifference ??= { turn: turn + 1, text, replies };
  }
  return parity;
}

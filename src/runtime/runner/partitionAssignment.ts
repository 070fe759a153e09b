/**
 * Which runner owns which WAL partition: a pure function of the live
 * runners, so every runner that sees the same runners computes the same
 * owners without asking anyone. Rendezvous hashing with bounded load: each
 * partition ranks the runners by a hash of (runner, partition) and goes to
 * the first one with room, where every runner has room for ⌊P/R⌋ partitions
 * and some for one more; the partitions whose first choice is strongest
 * choose first. Loads differ by at most one partition. A runner that joins
 * or leaves moves its own share and some more (bounded loads cascade): each
 * move costs a handover of that partition's sessions, not a lost turn.
 */
import { fnv1a } from "../../contracts/partitions.ts";

/** The partitions each of `runners` owns, among `partitions` (runners named twice count once). */
export function assignPartitions(runners: readonly string[], partitions: number): Map<string, number[]> {
  const names = [...new Set(runners)].sort();
  const owned = new Map<string, number[]>(names.map((runner) => [runner, []]));
  if (names.length === 0) return owned;
  const even = Math.floor(partitions / names.length);
  const ranked = Array.from({ length: partitions }, (_, partition) => ({
    partition,
    ranked: names
      .map((runner) => ({ runner, weight: fnv1a(`${runner}/${partition}`) }))
      .sort((a, b) => b.weight - a.weight || (a.runner < b.runner ? -1 : 1)),
  })).sort((a, b) => b.ranked[0]!.weight - a.ranked[0]!.weight || a.partition - b.partition);
  const load = (runner: string) => owned.get(runner)!.length;
  for (const { partition, ranked: choices } of ranked) {
    // Room below the even share first; once every runner has its share, one more each for the rest.
    const chosen =
      choices.find(({ runner }) => load(runner) < even) ?? choices.find(({ runner }) => load(runner) === even)!;
    owned.get(chosen.runner)!.push(partition);
  }
  for (const partitionsOwned of owned.values()) partitionsOwned.sort((a, b) => a - b);
  return owned;
}

/** The partitions `runner` owns among `partitions` when `runners` live (none when it is not among them). */
export function partitionsOf(runner: string, runners: readonly string[], partitions: number): Set<number> {
  return new Set(assignPartitions(runners, partitions).get(runner) ?? []);
}

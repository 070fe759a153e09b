/**
 * What nats-server does for one turn, counted: the soak's load in small (each turn from a new client, as
 * `conclave send` sends it: connect, submit, follow, close) on the offline deployment, with the bench's
 * wiretap on every subject. Prints nats-server's CPU per turn and the messages per turn by kind (JetStream
 * API calls by verb and stream, KV writes by bucket, events, requests between the processes), busiest
 * first: the profile behind the soak's nats-server CPU target (issue 42).
 *
 *   npx tsx bench/natsProfile.ts [turns=200] [sessions=20] [--reuse]
 *
 * `--reuse`: each session keeps one client for all its turns, which shows what the per-turn connection costs.
 */
import { connect } from "../src/client/client.ts";
import { startBenchCluster } from "./cluster.ts";
import { Wiretap } from "./hops.ts";
import { cpuTimeMs } from "./procfs.ts";
import { round } from "./stats.ts";

/** A subject as a kind of traffic: ids and numbers out, JetStream API calls by verb and stream. */
export function kindOf(subject: string): string {
  if (subject.startsWith("_INBOX")) return "(replies)";
  const api = /^\$JS\.API\.((?:[A-Z]+\.)*[A-Z]+)(?:\.([^.]+))?/.exec(subject);
  if (api) return `JS API ${api[1]} ${api[2] ?? ""}`.trim();
  if (subject.startsWith("$JS.ACK.")) return `JS ack ${subject.split(".")[2]}`;
  if (subject.startsWith("$JS.FC.")) return "JS flow control";
  const kv = /^\$KV\.([^.]+)\./.exec(subject);
  if (kv) return `KV put ${kv[1]}`;
  if (subject.startsWith("$SYS.") || subject.startsWith("$JS.EVENT.")) return "server advisories";
  return subject
    .split(".")
    .slice(0, 3)
    .map((token) => (/\d/.test(token) && token.length > 1 ? "<id>" : token))
    .join(".");
}

async function main(): Promise<void> {
  const turns = Number(process.argv[2] ?? 200);
  const sessions = Number(process.argv[3] ?? 20);
  const reuse = process.argv.includes("--reuse");
  const cluster = await startBenchCluster();
  const instrument = await cluster.connectInstrument("nats-profile");
  const natsPid = cluster.pids().find((p) => p.name === "nats-server")!.pid;
  try {
    // One unmeasured turn per session: streams, buckets and session state exist before the count starts.
    await Promise.all(Array.from({ length: sessions }, (_, i) => oneTurn(cluster.url, `profile-${i}`)));
    const tap = await Wiretap.start(instrument);
    const cpuBefore = cpuTimeMs(natsPid);
    const started = performance.now();
    let tickets = turns;
    await Promise.all(
      Array.from({ length: sessions }, async (_, i) => {
        const kept = reuse ? await connect({ servers: cluster.url, name: `profile-${i}` }) : undefined;
        while (tickets-- > 0) {
          if (kept) await kept.submit(`profile-${i}`, TEXT, { timeoutMs: 120_000 }).result;
          else await oneTurn(cluster.url, `profile-${i}`);
        }
        await kept?.close();
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = cpuTimeMs(natsPid) - cpuBefore;
    const messages = tap.stop();
    const counts = new Map<string, { count: number; bytes: number }>();
    for (const m of messages) {
      const kind = kindOf(m.subject);
      const entry = counts.get(kind) ?? { count: 0, bytes: 0 };
      entry.count += 1;
      entry.bytes += m.size;
      counts.set(kind, entry);
    }
    console.log(
      `${turns} turns from ${sessions} sessions${reuse ? " (one client each)" : " (a client per turn)"} in ${round(seconds, 1)} s: nats-server ${round(cpuMs / turns, 2)} ms CPU per turn; ${round(messages.length / turns, 1)} messages per turn seen by the wiretap`,
    );
    console.log("per turn, by kind (busiest first):");
    for (const [kind, { count, bytes }] of [...counts].sort((a, b) => b[1].count - a[1].count).slice(0, 30)) {
      console.log(
        `  ${String(round(count / turns, 2)).padStart(7)}  ${String(Math.round(bytes / count)).padStart(6)} B  ${kind}`,
      );
    }
  } finally {
    await instrument.close();
    await cluster.stop();
  }
}

const TEXT = "I'm stressed about my deadline";

/** One turn as `conclave send` makes it: a client of its own, from connect to close. */
async function oneTurn(url: string, session: string): Promise<void> {
  const client = await connect({ servers: url, name: `profile-${session}` });
  try {
    await client.submit(session, TEXT, { timeoutMs: 120_000 }).result;
  } finally {
    await client.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();

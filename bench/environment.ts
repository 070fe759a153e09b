import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { join } from "node:path";
import { findNatsServer, REPO_ROOT } from "../src/nats/server.ts";
import { findPostgresBin } from "../test/helpers/postgresServer.ts";

/** The machine and the versions a run was measured with. */
export interface Environment {
  date: string;
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  versions: Record<string, string>;
  commit: string;
}

const packageVersion = (name: string): string => {
  try {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "node_modules", name, "package.json"), "utf8"));
    return String(manifest.version);
  } catch {
    return "not installed";
  }
};

const run = (command: string, args: string[]): string => {
  try {
    return execFileSync(command, args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      cwd: REPO_ROOT,
    }).trim();
  } catch {
    return "unknown";
  }
};

/** `postgres --version`'s number, or why there is none (LangGraph.js + PostgresSaver then is not measured). */
export function postgresVersion(): string {
  let bin: string;
  try {
    bin = findPostgresBin();
  } catch {
    return "not found";
  }
  return run(join(bin, "postgres"), ["--version"]).replace(/^postgres \(PostgreSQL\)\s*/, "");
}

function cpuModel(): string {
  const fromOs = cpus()[0]?.model?.trim();
  if (fromOs && fromOs !== "unknown") return fromOs;
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? "unknown";
  } catch {
    return "unknown";
  }
}

export function describeEnvironment(): Environment {
  const nats = findNatsServer();
  const dirty = run("git", ["status", "--porcelain", "--untracked-files=no"]);
  return {
    date: new Date().toISOString(),
    cpuModel: cpuModel(),
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: release(),
    versions: {
      node: process.version,
      "nats-server": nats ? run(nats, ["--version"]).replace(/^nats-server:\s*/, "") : "not found",
      xstate: packageVersion("xstate"),
      "@langchain/langgraph": packageVersion("@langchain/langgraph"),
      "@langchain/core": packageVersion("@langchain/core"),
      "@langchain/langgraph-checkpoint-postgres": packageVersion("@langchain/langgraph-checkpoint-postgres"),
      pg: packageVersion("pg"),
      postgresql: postgresVersion(),
      "@opentelemetry/api": packageVersion("@opentelemetry/api"),
      "@nats-io/nats-core": packageVersion("@nats-io/nats-core"),
      "@nats-io/jetstream": packageVersion("@nats-io/jetstream"),
      zod: packageVersion("zod"),
      tsx: packageVersion("tsx"),
    },
    commit: `${run("git", ["rev-parse", "--short", "HEAD"])}${dirty && dirty !== "unknown" ? " (with uncommitted changes)" : ""}`,
  };
}

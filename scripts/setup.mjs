#!/usr/bin/env node
// `npm run setup`: installs the npm dependencies, then the system packages the project
// needs when they are missing: nats-server (to run), Chromium (for the offline viewer's
// browser test), openssl (certificates for the TLS tests), tmux (the chat's terminal test),
// redis-server and PostgreSQL (the recipe blackboard tests, which start private
// instances on free ports), and a C compiler with the NATS C client (the test of an
// outside client reading the event log). As root it uses apt-get; otherwise it prints what to run.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { delimiter, join } from "node:path";

const step = (message) => console.log(`\n[setup] ${message}`);
const run = (command, args, env = process.env) => {
  const result = spawnSync(command, args, { stdio: "inherit", env });
  if (result.status !== 0) {
    console.error(`[setup] failed: ${command} ${args.join(" ")} (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
};
// Debian keeps PostgreSQL's server programs (initdb, pg_ctl) off PATH, in /usr/lib/postgresql/<version>/bin.
const postgresBins = () => {
  try {
    return readdirSync("/usr/lib/postgresql").map((version) => join("/usr/lib/postgresql", version, "bin"));
  } catch {
    return [];
  }
};
const find = (binary) => {
  for (const dir of [
    ...(process.env.PATH ?? "").split(delimiter),
    "/usr/sbin",
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/bin",
    ...postgresBins(),
  ]) {
    if (dir && existsSync(join(dir, binary))) return join(dir, binary);
  }
  return null;
};

/** The Debian package and the binary (or, with `file`, the file) it provides, and why the project needs it. */
const SYSTEM_PACKAGES = [
  {
    binary: "nats-server",
    apt: "nats-server",
    why: "the message server Conclave runs on",
    other: "brew install nats-server, or https://docs.nats.io/running-a-nats-service/introduction/installation",
  },
  {
    binary: "chromium",
    apt: "chromium",
    why: "the offline viewer's browser test (npm test)",
    other: "any Chromium or Chrome, then set CHROMIUM_PATH",
  },
  {
    binary: "openssl",
    apt: "openssl",
    why: "throwaway certificates for the TLS tests (npm test)",
    other: "your system's openssl package",
  },
  {
    binary: "tmux",
    apt: "tmux",
    why: "drives `conclave chat` in a real terminal (npm test)",
    other: "brew install tmux, or your system's tmux package",
  },
  {
    binary: "redis-server",
    apt: "redis-server",
    why: "the Redis blackboard tests start their own redis-server (npm test)",
    other: "brew install redis, or your system's redis-server package",
  },
  {
    // The tests run initdb and pg_ctl on a private cluster; any cluster the package starts on 5432 is not used.
    binary: "initdb",
    apt: "postgresql",
    why: "the PostgreSQL blackboard tests start their own cluster (npm test)",
    other: "brew install postgresql, or your system's PostgreSQL server package",
  },
  {
    binary: "cc",
    apt: "gcc",
    why: "compiles the C client of the event-log test (npm test)",
    other: "your system's C compiler",
  },
  {
    binary: "libnats (nats/nats.h)",
    file: "/usr/include/nats/nats.h",
    apt: "libnats-dev",
    why: "the NATS C client, which the event-log test reads a turn with as an outside client (npm test)",
    other: "build https://github.com/nats-io/nats.c and install it, so that `cc … -lnats` links",
  },
];
const present = (pkg) => (pkg.file ? existsSync(pkg.file) : find(pkg.binary));

step("installing npm dependencies");
run("npm", ["install", "--no-audit", "--no-fund"]);

const missing = SYSTEM_PACKAGES.filter(
  (pkg) => !present(pkg) && !(pkg.binary === "chromium" && process.env.CHROMIUM_PATH),
);
if (missing.length > 0) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (isRoot && existsSync("/usr/bin/apt-get")) {
    step(`installing ${missing.map((pkg) => pkg.apt).join(", ")} with apt-get`);
    run("apt-get", ["update", "-qq"]);
    run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing.map((pkg) => pkg.apt)], {
      ...process.env,
      DEBIAN_FRONTEND: "noninteractive",
    });
  }
}
const stillMissing = SYSTEM_PACKAGES.filter(
  (pkg) => !present(pkg) && !(pkg.binary === "chromium" && process.env.CHROMIUM_PATH),
);
if (stillMissing.length > 0) {
  console.error("\n[setup] missing, and this script can only install them as root with apt-get:");
  for (const pkg of stillMissing) {
    console.error(
      `  ${pkg.binary}: ${pkg.why}\n    Debian/Ubuntu: sudo apt-get install ${pkg.apt}\n    other: ${pkg.other}`,
    );
  }
  console.error("Install them, then run `npm run setup` again.");
  process.exit(1);
}
const natsServer = find("nats-server");
console.log(`[setup] ${execFileSync(natsServer, ["--version"]).toString().trim()} at ${natsServer}`);
step("done. Next: npm start");

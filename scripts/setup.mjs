#!/usr/bin/env node
// `npm run setup`: installs the npm dependencies, then nats-server if it is missing
// (with apt-get when running as root; otherwise it prints what to run).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

const step = (message) => console.log(`\n[setup] ${message}`);
const run = (command, args) => {
  const result = spawnSync(command, args, { stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`[setup] failed: ${command} ${args.join(" ")} (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
};
const findNatsServer = () => {
  for (const dir of [
    ...(process.env.PATH ?? "").split(delimiter),
    "/usr/sbin",
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/bin",
  ]) {
    if (dir && existsSync(join(dir, "nats-server"))) return join(dir, "nats-server");
  }
  return null;
};

step("installing npm dependencies");
run("npm", ["install", "--no-audit", "--no-fund"]);

step("checking for nats-server");
let natsServer = findNatsServer();
if (!natsServer) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const hasApt = existsSync("/usr/bin/apt-get");
  if (isRoot && hasApt) {
    step("nats-server not found: installing it with apt-get");
    run("apt-get", ["update", "-qq"]);
    spawnSync("apt-get", ["install", "-y", "-qq", "nats-server"], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
    natsServer = findNatsServer();
  }
  if (!natsServer) {
    console.error(`
[setup] nats-server is not installed, and this script can only install it as root with apt-get.
Install it yourself, then run \`npm run setup\` again:
  Debian/Ubuntu:  sudo apt-get install nats-server
  macOS:          brew install nats-server
  Other:          https://docs.nats.io/running-a-nats-service/introduction/installation
Or point Conclave at a server you already run: export CONCLAVE_NATS_URL=nats://host:4222`);
    process.exit(1);
  }
}
console.log(`[setup] ${execFileSync(natsServer, ["--version"]).toString().trim()} at ${natsServer}`);
step("done. Next: npm start");

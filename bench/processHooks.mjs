// Preloaded into the runner and worker processes the bench spawns (NODE_OPTIONS=--import …).
// It adds nothing to the runtime: it only answers the bench over the child's IPC channel:
//   { bench: "gc", id }                   → full GC, then { bench: "reply", id, memory }
//   { bench: "profile-start", id }        → starts the V8 CPU profiler (inspector, in-process)
//   { bench: "profile-stop", id, path }   → stops it, writes the .cpuprofile JSON to `path`
//   { bench: "clock", id }                → { now }: this process's event clock (timeOrigin + now)
// so the profile covers exactly the measured window, not start-up.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
let session = null;

const reply = (id, body) => process.send?.({ bench: "reply", id, ...body });

async function handle(message) {
  if (!message || typeof message !== "object" || typeof message.bench !== "string") return;
  const { id } = message;
  try {
    if (message.bench === "clock") {
      reply(id, { now: performance.timeOrigin + performance.now() });
    } else if (message.bench === "gc") {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      reply(id, { memory: process.memoryUsage() });
    } else if (message.bench === "profile-start") {
      session = new Session();
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: message.intervalUs ?? 200 });
      await session.post("Profiler.start");
      reply(id, {});
    } else if (message.bench === "profile-stop") {
      if (!session) throw new Error("the profiler is not running");
      const { profile } = await session.post("Profiler.stop");
      session.disconnect();
      session = null;
      writeFileSync(message.path, JSON.stringify(profile));
      reply(id, { path: message.path });
    }
  } catch (error) {
    reply(id, { error: String(error) });
  }
}

const onMessage = (message) => void handle(message);
process.on("message", onMessage);
// Listening on the IPC channel keeps it referenced: let go on shutdown so the process can exit.
const release = () => process.off("message", onMessage);
process.once("SIGTERM", release);
process.once("SIGINT", release);

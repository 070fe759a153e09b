import { beforeAll, describe, expect, it } from "vitest";
import type { Episode } from "../../src/contracts/workspace.ts";
import type { SessionMemory } from "../../src/memory/sessionMemory.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useSessionMemory } from "../helpers/sessionMemory.ts";

const nats = useNatsServer();
let memory: SessionMemory;

const stack = useSessionMemory(nats);
beforeAll(() => {
  ({ memory } = stack);
});

const episode = (turn: number, user: string, tools?: string[]): Episode => ({
  session_id: "tools-used",
  turn_id: turn,
  user_text: user,
  response: "Done.",
  intent: "task",
  ts: 1_700_000_000_000 + turn,
  ...(tools ? { tools_invoked: tools } : {}),
});

describe("episodes and the tools their turns invoked", () => {
  beforeAll(async () => {
    await memory.commit(episode(1, "I live in Lisbon and my notes are in the drive."));
    await memory.commit(episode(2, "Read my notes please.", ["mcp_fs_read_text_file"]));
    await memory.commit(episode(3, "Save a copy of my notes.", ["mcp_fs_write_file", "mcp_fs_read_text_file"]));
  });

  it("a search for a tool finds only the episodes whose turn invoked it, each naming its tools", async () => {
    const read = await memory.search({ session_id: "tools-used", query: "", limit: 10, tool: "mcp_fs_read_text_file" });
    expect(read.items.map((item) => [item.id, item.kind, item.tools])).toEqual(
      expect.arrayContaining([
        ["episode.2", "episode", ["mcp_fs_read_text_file"]],
        ["episode.3", "episode", ["mcp_fs_read_text_file", "mcp_fs_write_file"]],
      ]),
    );
    expect(read.items).toHaveLength(2);
    // The name as the user types it: case aside; ranked by the query among them.
    const write = await memory.search({
      session_id: "tools-used",
      query: "copy",
      limit: 10,
      tool: "MCP_FS_WRITE_FILE",
    });
    expect(write.items.map((item) => item.id)).toEqual(["episode.3"]);
    expect(
      (await memory.search({ session_id: "tools-used", query: "notes", limit: 10, tool: "disk_usage" })).items,
    ).toEqual([]);
  });

  it("without a tool, the search is as before: facts and episodes, an episode without tools naming none", async () => {
    const all = await memory.search({ session_id: "tools-used", query: "notes Lisbon", limit: 100 });
    expect(all.items.some((item) => item.kind === "fact")).toBe(true);
    const first = all.items.find((item) => item.id === "episode.1");
    expect(first).toBeDefined();
    expect(first).not.toHaveProperty("tools");
  });

  it("the episode recalled for a later turn keeps its tools", async () => {
    const reply = await memory.retrieve({
      session_id: "tools-used",
      turn_id: 4,
      user_message: "Save a copy of my notes again.",
      limit: 3,
    });
    const third = reply.episodes.find((recalled) => recalled.turn_id === 3);
    expect(third?.tools_invoked).toEqual(["mcp_fs_read_text_file", "mcp_fs_write_file"]);
    expect(reply.episodes.find((recalled) => recalled.turn_id === 1)?.tools_invoked).toBeUndefined();
  });
});

import { lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ToolCallMode, ToolCallRequest } from "../../src/contracts/tool.ts";
import { diskUsage, processList, sandboxWrite, TOOLS } from "../../src/tools/builtins/index.ts";
import type { ToolDefinition } from "../../src/tools/defineTool.ts";
import { runTool } from "../../src/tools/runTool.ts";

/** Each call gets its own idempotency key unless a test passes one: sandbox_write remembers keys for the whole process. */
let keys = 0;

function request(
  tool: ToolDefinition,
  args: unknown,
  mode: ToolCallMode = "live",
  extra: Partial<ToolCallRequest> = {},
): ToolCallRequest {
  keys += 1;
  return {
    session_id: "s",
    turn_id: 1,
    call_id: `c${keys}`,
    idempotency_key: `k${keys}`,
    tool: tool.manifest.name,
    args,
    mode,
    timeout_ms: 5000,
    ...extra,
  };
}

const call = (tool: ToolDefinition, args: unknown, mode?: ToolCallMode, extra?: Partial<ToolCallRequest>) =>
  runTool(tool, request(tool, args, mode, extra), new AbortController().signal);

/** The error a call failed with (fails the test when the call succeeded). */
async function errorOf(promise: Promise<unknown>): Promise<Error & { code: string }> {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(error, "the call should have failed").toBeInstanceOf(Error);
  return error as Error & { code: string };
}

/** The error code a call failed with. */
const failureOf = async (promise: Promise<unknown>): Promise<string> => (await errorOf(promise)).code;

/** The message of a call sandbox_write refused itself (not one that failed on the way, e.g. following a link). */
async function refusalOf(promise: Promise<unknown>): Promise<string> {
  const error = await errorOf(promise);
  expect(error.code).toBe("tool_failed");
  expect(error.message).toContain("sandbox_write refused");
  return error.message;
}

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

let scratch: string;
let sandbox: string;
let outside: string;
const savedSandboxEnv = process.env.CONCLAVE_SANDBOX_DIR;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "conclave-tools-test-"));
  outside = join(scratch, "outside");
  await mkdir(outside);
});

afterAll(async () => {
  if (savedSandboxEnv === undefined) delete process.env.CONCLAVE_SANDBOX_DIR;
  else process.env.CONCLAVE_SANDBOX_DIR = savedSandboxEnv;
  await rm(scratch, { recursive: true, force: true });
});

describe("TOOLS", () => {
  it("lists the three built-in tools with the declared risk and effect", () => {
    expect(TOOLS.map((tool) => [tool.manifest.name, tool.manifest.risk, tool.manifest.effect])).toEqual([
      ["disk_usage", "safe", "read"],
      ["process_list", "safe", "read"],
      ["sandbox_write", "standard", "write"],
    ]);
    expect(sandboxWrite.manifest).toMatchObject({ dry_run: true, rollback: true });
  });
});

describe("disk_usage", () => {
  it("answers consistent sizes for the file system holding a path", async () => {
    const { result } = await call(diskUsage, { path: scratch });
    const usage = result as Record<string, number | string>;
    expect(usage.path).toBe(scratch);
    const total = usage.total_bytes as number;
    const free = usage.free_bytes as number;
    const used = usage.used_bytes as number;
    expect(total).toBeGreaterThan(0);
    expect(used).toBeGreaterThanOrEqual(0);
    expect(free).toBeGreaterThanOrEqual(0);
    expect(used + free).toBeLessThanOrEqual(total);
    expect(usage.used_percent).toBeGreaterThanOrEqual(0);
    expect(usage.used_percent).toBeLessThanOrEqual(100);
    expect(usage.used_percent).toBeCloseTo((used / (used + free)) * 100, 1);
  });

  it("defaults to /", async () => {
    const { result } = await call(diskUsage, {});
    expect((result as { path: string }).path).toBe("/");
  });

  it("fails with tool_failed and a one-line message naming a missing path", async () => {
    const missing = join(scratch, "no-such-dir", "deeper");
    const error = await runTool(diskUsage, request(diskUsage, { path: missing }), new AbortController().signal).then(
      () => undefined,
      (error: Error & { code: string }) => error,
    );
    expect(error?.code).toBe("tool_failed");
    expect(error?.message).toContain(missing);
    expect(error?.message).not.toContain("\n");
  });
});

describe("process_list", () => {
  type Entry = { pid: number; name: string; rss_kb: number };
  const processesOf = (result: unknown) => (result as { processes: Entry[] }).processes;

  it("lists at most `limit` processes, largest resident memory first", async () => {
    const processes = processesOf((await call(processList, { limit: 50 })).result);
    expect(processes.length).toBeGreaterThan(0);
    expect(processes.length).toBeLessThanOrEqual(50);
    for (const entry of processes) {
      expect(Number.isInteger(entry.pid) && entry.pid > 0).toBe(true);
      expect(entry.name.length).toBeGreaterThan(0);
    }
    for (let i = 1; i < processes.length; i += 1)
      expect(processes[i - 1]!.rss_kb).toBeGreaterThanOrEqual(processes[i]!.rss_kb);
    expect(new Set(processes.map((entry) => entry.pid)).size).toBe(processes.length);
    // This test process is one of them: the largest is at least about as large as it is.
    const ownRssKb = process.memoryUsage().rss / 1024;
    expect(processes[0]!.rss_kb).toBeGreaterThan(ownRssKb / 2);
  });

  it("honours a small limit exactly (the test runner and this fork are two processes)", async () => {
    expect(processesOf((await call(processList, { limit: 2 })).result)).toHaveLength(2);
    expect(processesOf((await call(processList, {})).result).length).toBeLessThanOrEqual(10);
  });

  it("refuses a limit out of 1..50 as invalid_request", async () => {
    expect(await failureOf(call(processList, { limit: 0 }))).toBe("invalid_request");
    expect(await failureOf(call(processList, { limit: 51 }))).toBe("invalid_request");
  });
});

describe("sandbox_write", () => {
  beforeEach(async () => {
    // A fresh sandbox for each test, read by the tool at call time (not at import).
    sandbox = await mkdtemp(join(scratch, "sandbox-"));
    process.env.CONCLAVE_SANDBOX_DIR = sandbox;
  });

  it("writes a new file, and its rollback deletes it", async () => {
    const args = { path: "notes/new.txt", content: "hello" };
    const { result } = await call(sandboxWrite, args);
    expect(result).toEqual({ path: join("notes", "new.txt"), bytes: 5, previous: null });
    expect(await readFile(join(sandbox, "notes", "new.txt"), "utf8")).toBe("hello");

    const undone = await call(sandboxWrite, args, "rollback", { undo: { args, result } });
    expect(undone.result).toEqual({ restored: join("notes", "new.txt") });
    expect(await exists(join(sandbox, "notes", "new.txt"))).toBe(false);
  });

  it("overwrites a file keeping its previous content, and the rollback restores it", async () => {
    await writeFile(join(sandbox, "a.txt"), "before");
    const args = { path: "a.txt", content: "after, ünïcode" };
    const { result } = await call(sandboxWrite, args);
    expect(result).toEqual({ path: "a.txt", bytes: Buffer.byteLength("after, ünïcode"), previous: "before" });
    expect(await readFile(join(sandbox, "a.txt"), "utf8")).toBe("after, ünïcode");

    await call(sandboxWrite, args, "rollback", { undo: { args, result } });
    expect(await readFile(join(sandbox, "a.txt"), "utf8")).toBe("before");
  });

  it("a dry run reports what it would write and changes nothing on disk", async () => {
    await writeFile(join(sandbox, "kept.txt"), "kept");
    const overwrite = await call(sandboxWrite, { path: "kept.txt", content: "new" }, "dry_run");
    expect(overwrite.result).toEqual({ would_write: "kept.txt", bytes: 3, exists: true });
    expect(await readFile(join(sandbox, "kept.txt"), "utf8")).toBe("kept");

    const create = await call(sandboxWrite, { path: "sub/dir/fresh.txt", content: "x" }, "dry_run");
    expect(create.result).toEqual({ would_write: join("sub", "dir", "fresh.txt"), bytes: 1, exists: false });
    expect(await readdir(sandbox)).toEqual(["kept.txt"]);
  });

  it("a dry run does not even create the sandbox directory", async () => {
    const unborn = join(scratch, "unborn-sandbox");
    process.env.CONCLAVE_SANDBOX_DIR = unborn;
    const { result } = await call(sandboxWrite, { path: "x.txt", content: "x" }, "dry_run");
    expect(result).toEqual({ would_write: "x.txt", bytes: 1, exists: false });
    expect(await exists(unborn)).toBe(false);
  });

  it("creates the sandbox directory on demand for a live write", async () => {
    const unborn = join(scratch, "created-sandbox");
    process.env.CONCLAVE_SANDBOX_DIR = unborn;
    await call(sandboxWrite, { path: "x.txt", content: "x" });
    expect(await readFile(join(unborn, "x.txt"), "utf8")).toBe("x");
  });

  it("refuses paths leading out of the sandbox as invalid_request, writing nothing", async () => {
    const passwd = await readFile("/etc/passwd", "utf8").catch(() => undefined);
    expect(await failureOf(call(sandboxWrite, { path: "../escape", content: "x" }))).toBe("invalid_request");
    expect(await failureOf(call(sandboxWrite, { path: "a/../../escape", content: "x" }))).toBe("invalid_request");
    expect(await failureOf(call(sandboxWrite, { path: "/etc/passwd", content: "x" }))).toBe("invalid_request");
    expect(await failureOf(call(sandboxWrite, { path: "..", content: "x" }))).toBe("invalid_request");
    expect(await failureOf(call(sandboxWrite, { path: "x".repeat(201), content: "x" }))).toBe("invalid_request");
    expect(await exists(join(scratch, "escape"))).toBe(false);
    expect(await readFile("/etc/passwd", "utf8").catch(() => undefined)).toBe(passwd);
    expect(await readdir(sandbox)).toEqual([]);
  });

  it("refuses content over 64 KiB of UTF-8 as invalid_request", async () => {
    // 40 000 characters, 80 000 bytes: under the character limit, over the byte limit.
    expect(await failureOf(call(sandboxWrite, { path: "big.txt", content: "é".repeat(40_000) }))).toBe(
      "invalid_request",
    );
    expect(await exists(join(sandbox, "big.txt"))).toBe(false);
  });

  it("refuses to write through a symlinked directory pointing outside, live or dry", async () => {
    await symlink(outside, join(sandbox, "link"));
    expect(await refusalOf(call(sandboxWrite, { path: "link/x.txt", content: "x" }))).toMatch(/link leading outside/);
    expect(await refusalOf(call(sandboxWrite, { path: "link/deeper/x.txt", content: "x" }))).toMatch(
      /link leading outside/,
    );
    expect(await refusalOf(call(sandboxWrite, { path: "link/x.txt", content: "x" }, "dry_run"))).toMatch(
      /link leading outside/,
    );
    expect(await readdir(outside)).toEqual([]);
  });

  it("refuses to write through a symlinked file, existing or dangling", async () => {
    await writeFile(join(outside, "target.txt"), "untouched");
    await symlink(join(outside, "target.txt"), join(sandbox, "file-link"));
    await symlink(join(outside, "dangling.txt"), join(sandbox, "dangling-link"));
    await symlink(join(outside, "nowhere"), join(sandbox, "dangling-dir"));
    expect(await refusalOf(call(sandboxWrite, { path: "file-link", content: "x" }))).toMatch(/symbolic link/);
    expect(await refusalOf(call(sandboxWrite, { path: "dangling-link", content: "x" }))).toMatch(/symbolic link/);
    expect(await refusalOf(call(sandboxWrite, { path: "dangling-dir/x.txt", content: "x" }))).toMatch(
      /link to nowhere/,
    );
    expect(await readFile(join(outside, "target.txt"), "utf8")).toBe("untouched");
    expect((await readdir(outside)).sort()).toEqual(["target.txt"]);
  });

  it("writes once per idempotency key: a second attempt answers the first result", async () => {
    const args = { path: "once.txt", content: "first" };
    const first = await call(sandboxWrite, args, "live", { idempotency_key: "same-key" });
    // Changed by hand between the attempts: a second write would overwrite it.
    await writeFile(join(sandbox, "once.txt"), "changed by hand");
    const second = await call(sandboxWrite, { path: "once.txt", content: "second" }, "live", {
      idempotency_key: "same-key",
    });
    expect(second.result).toEqual(first.result);
    expect(await readFile(join(sandbox, "once.txt"), "utf8")).toBe("changed by hand");

    // Another key writes.
    await call(sandboxWrite, { path: "once.txt", content: "third" }, "live", { idempotency_key: "other-key" });
    expect(await readFile(join(sandbox, "once.txt"), "utf8")).toBe("third");
  });

  it("forgets a key whose write failed, so the call can be tried again", async () => {
    await symlink(outside, join(sandbox, "link"));
    const key = { idempotency_key: "retry-key" };
    expect(await failureOf(call(sandboxWrite, { path: "link/x.txt", content: "x" }, "live", key))).toBe("tool_failed");
    await call(sandboxWrite, { path: "ok.txt", content: "ok" }, "live", key);
    expect(await readFile(join(sandbox, "ok.txt"), "utf8")).toBe("ok");
  });

  it("refuses to overwrite a file it could not put back (over 64 KiB, or not UTF-8), leaving it as it was", async () => {
    const big = "x".repeat(64 * 1024 + 1);
    await writeFile(join(sandbox, "big.txt"), big);
    await writeFile(join(sandbox, "binary.bin"), Buffer.from([0xff, 0xfe, 0x00]));
    expect(await refusalOf(call(sandboxWrite, { path: "big.txt", content: "small" }))).toMatch(/larger than 64 KiB/);
    expect(await refusalOf(call(sandboxWrite, { path: "binary.bin", content: "text" }))).toMatch(/not UTF-8/);
    expect(await readFile(join(sandbox, "big.txt"), "utf8")).toBe(big);
    expect(await readFile(join(sandbox, "binary.bin"))).toEqual(Buffer.from([0xff, 0xfe, 0x00]));
  });

  it("refuses a rollback without the call's result", async () => {
    const args = { path: "a.txt", content: "x" };
    expect(await failureOf(call(sandboxWrite, args, "rollback", { undo: { args, result: { nope: 1 } } }))).toBe(
      "tool_failed",
    );
  });
});

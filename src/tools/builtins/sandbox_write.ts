import { constants } from "node:fs";
import { lstat, mkdir, open, realpath, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, normalize, relative, resolve, sep } from "node:path";
import { z } from "zod";
import { defineTool } from "../defineTool.ts";

/** The most a call writes, and the most of a file's previous content it keeps for a rollback: 64 KiB. */
const MAX_BYTES = 64 * 1024;

/** Idempotency keys remembered (oldest forgotten first): enough for the calls in flight, bounded so a long-lived worker does not grow. */
const MAX_REMEMBERED = 1_000;

/** The sandbox directory, read at each call so a worker (or a test) can point it elsewhere without reloading the tool. */
export const sandboxDir = (): string => resolve(process.env.CONCLAVE_SANDBOX_DIR || join(tmpdir(), "conclave-sandbox"));

const leavesSandbox = (path: string): boolean => {
  const normal = normalize(path);
  return normal === "." || normal === ".." || normal.startsWith(`..${sep}`);
};

/** A file's path relative to the sandbox: checked here so a bad path is refused as invalid arguments, before anything runs. */
const SandboxPath = z
  .string()
  .min(1)
  .max(200)
  .refine((path) => !path.includes("\0"), "the path may not contain NUL")
  .refine((path) => !isAbsolute(path), "the path must be relative to the sandbox, not absolute")
  .refine((path) => !leavesSandbox(path), "the path must name a file inside the sandbox ('..' may not lead out)")
  .refine((path) => !/[\\/]$/.test(path), "the path must name a file, not a directory")
  .describe("The file's path, relative to the sandbox directory (e.g. notes/today.txt)");

const WriteResult = z.object({
  /** The path written, relative to the sandbox (normalized). */
  path: z.string(),
  bytes: z.number().int().min(0),
  /** The file's content before the write (null: there was no file): what a rollback puts back. */
  previous: z.string().nullable(),
});
type WriteResult = z.infer<typeof WriteResult>;

const errnoOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/** True when something is at `path`, a dangling symlink included (not followed). */
const entryExists = (path: string): Promise<boolean> =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** True when `path` is `root` or below it (`root` and `path` absolute, symlinks already resolved). */
function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

const refused = (path: string, why: string): Error => new Error(`sandbox_write refused '${path}': ${why}`);

/** The sandbox with its symlinks resolved, or as configured while it does not exist yet. Creates nothing. */
async function sandboxRoot(): Promise<string> {
  const dir = sandboxDir();
  return realpath(dir).catch((error) => {
    if (errnoOf(error) === "ENOENT") return dir;
    throw error;
  });
}

/**
 * The absolute path of a sandbox file, once it is sure to stay inside the
 * sandbox: the nearest existing directory above it, symlinks resolved, is in
 * the sandbox (a symlinked directory pointing out is refused, and so is a
 * dangling one, which a later mkdir could follow), and the file itself, if it
 * exists, is a plain file with one link (neither a symlink nor a hard link to
 * a file elsewhere). Touches nothing on disk.
 */
async function locate(root: string, path: string): Promise<string> {
  const target = resolve(root, path);
  if (target === root || !isInside(root, target)) throw refused(path, "it leads outside the sandbox");
  for (let dir = dirname(target); dir !== root && dirname(dir) !== dir; dir = dirname(dir)) {
    const real = await realpath(dir).catch((error) => {
      if (errnoOf(error) === "ENOENT") return undefined;
      throw error;
    });
    if (real !== undefined) {
      if (!isInside(root, real)) throw refused(path, "a directory on the way is a link leading outside the sandbox");
      break;
    }
    if (await entryExists(dir)) throw refused(path, "a directory on the way is a link to nowhere");
  }
  const existing = await lstat(target).catch((error) => {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  });
  if (existing?.isSymbolicLink()) throw refused(path, "it is a symbolic link");
  if (existing && !existing.isFile()) throw refused(path, "it is not a regular file");
  if (existing && existing.nlink > 1) throw refused(path, "it is hard-linked elsewhere");
  return target;
}

/** Creates the sandbox and the file's directories, then checks again that they stayed inside (something may have raced us). */
async function prepare(path: string): Promise<string> {
  await mkdir(sandboxDir(), { recursive: true });
  const root = await sandboxRoot();
  const target = await locate(root, path);
  await mkdir(dirname(target), { recursive: true });
  if (!isInside(root, await realpath(dirname(target))))
    throw refused(path, "a directory on the way is a link leading outside the sandbox");
  return target;
}

/** The file's text, or null when there is none; refused when it could not be put back exactly by a rollback. */
async function readPrevious(target: string, path: string): Promise<string | null> {
  // O_NOFOLLOW: a symlink swapped in since `locate` fails here instead of being read through.
  const handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW).catch((error) => {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  });
  if (!handle) return null;
  try {
    const { size } = await handle.stat();
    // The previous content travels in the call's result (and the turn's log):
    // a larger file would be kept truncated and a rollback would corrupt it.
    if (size > MAX_BYTES)
      throw refused(path, "the file there is larger than 64 KiB: overwriting it could not be undone");
    const bytes = await handle.readFile();
    const text = bytes.toString("utf8");
    if (!Buffer.from(text, "utf8").equals(bytes))
      throw refused(path, "the file there is not UTF-8 text: overwriting it could not be undone");
    return text;
  } finally {
    await handle.close();
  }
}

async function writeText(target: string, content: string): Promise<void> {
  const handle = await open(
    target,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    await handle.writeFile(content, "utf8");
  } finally {
    await handle.close();
  }
}

/**
 * Writes applied in this process, by idempotency key. A runner taking a turn
 * over from one that died may make a call that was in flight again, with the
 * same key: answering the first result instead of writing again keeps a
 * retried call from overwriting what changed since (and from recording the
 * first write's content as `previous`, which would make a rollback a no-op).
 * A pending write is kept too, so a second attempt racing the first waits for
 * it; a failed one is forgotten, so it can be tried again.
 */
const applied = new Map<string, Promise<WriteResult>>();

function remember(key: string, write: Promise<WriteResult>): void {
  applied.set(key, write);
  if (applied.size > MAX_REMEMBERED) applied.delete(applied.keys().next().value as string);
  write.catch(() => {
    if (applied.get(key) === write) applied.delete(key);
  });
}

/** Writes a text file inside the sandbox directory only; can be dry-run and rolled back. */
export const sandboxWrite = defineTool({
  name: "sandbox_write",
  description:
    "Writes a UTF-8 text file (at most 64 KiB) at a path relative to the sandbox directory, replacing it if it exists. Paths leading outside the sandbox are refused. Can be dry-run and rolled back.",
  risk: "standard",
  effect: "write",
  input: z.object({
    path: SandboxPath,
    content: z
      .string()
      .max(MAX_BYTES)
      .refine((content) => Buffer.byteLength(content, "utf8") <= MAX_BYTES, "the content is over 64 KiB of UTF-8")
      .describe("The file's whole new text"),
  }),
  output: WriteResult,
  run: ({ path, content }, { idempotencyKey, signal }) => {
    const earlier = applied.get(idempotencyKey);
    if (earlier) return earlier;
    const write = (async (): Promise<WriteResult> => {
      const target = await prepare(path);
      const previous = await readPrevious(target, path);
      signal.throwIfAborted();
      await writeText(target, content);
      return { path: normalize(path), bytes: Buffer.byteLength(content, "utf8"), previous };
    })();
    remember(idempotencyKey, write);
    return write;
  },
  dryRun: async ({ path, content }) => {
    const target = await locate(await sandboxRoot(), path);
    const exists = await entryExists(target);
    return { would_write: normalize(path), bytes: Buffer.byteLength(content, "utf8"), exists };
  },
  rollback: async ({ input, result }) => {
    const call = WriteResult.safeParse(result);
    if (!call.success) throw new Error("sandbox_write rollback needs the call's result ({ path, bytes, previous })");
    if (call.data.path !== normalize(input.path))
      throw new Error(`sandbox_write rollback: the result is for '${call.data.path}', not '${input.path}'`);
    if (call.data.previous === null) {
      // The call created the file: undoing it removes it (already gone is fine).
      const target = await locate(await sandboxRoot(), input.path);
      await unlink(target).catch((error) => {
        if (errnoOf(error) !== "ENOENT") throw error;
      });
    } else {
      await writeText(await prepare(input.path), call.data.previous);
    }
    return { restored: normalize(input.path) };
  },
});

/**
 * What a guide (a Markdown file) names of the CLI and the event log: the
 * `conclave` commands and their flags, and the event kinds. Only code counts,
 * never prose: fenced blocks and code spans.
 *
 * - A command: `conclave <word>` in a fence or a span (`npx conclave send`),
 *   where the word is a command's shape (lower case: `conclave src/bus` and
 *   `conclave WAL` name none). docs/commands.md writes commands without
 *   `conclave`: there, every span of the first cell of a table whose header
 *   is `command`, and the span a bullet starts with, is a command line.
 * - A flag: a `--word` (or `-x`) after such a command, up to the end of that
 *   shell command (a pipe, `&&`, `;`, a redirection or a comment outside
 *   brackets, the next `conclave`, or `--`); quoted text is not read
 *   (`--exec "conclave send --session s"`: `--session` is `send`'s, not
 *   `up`'s). In a docs/commands.md bullet, a span that starts with a flag
 *   (`--timeout`) is a flag of the command the bullet starts with.
 * - `a|b`, and `a \| b` in a table cell, are alternatives, each named.
 * - An event kind: an UPPER_SNAKE word in a fence or a span that reads as one
 *   (see {@link looksLikeEvent}).
 */

/** One name a guide uses, where it uses it. */
export interface Mention {
  file: string;
  line: number;
  /** `command`: `name` is a command; `flag`: `name` is a flag (`--x`) of `command`; `event`: an event kind. */
  type: "command" | "flag" | "event";
  name: string;
  /** The command a flag was given to; `""` for `conclave --flag` (a global flag). */
  command?: string;
  /** The code it was read from. */
  code: string;
}

/** A piece of code in a guide: a fence's line (its `\` continuations joined) or a span. */
interface Code {
  line: number;
  text: string;
  /** A command line written without `conclave` (docs/commands.md's tables and bullets). */
  bareCommand: boolean;
}

/** The one guide that writes command lines without `conclave`. */
const isCommandsGuide = (file: string) => file.endsWith("docs/commands.md");

/** Fenced lines and code spans of `markdown`, with their line numbers. */
export function codeOf(markdown: string, file: string): Code[] {
  const lines = markdown.split("\n");
  const code: Code[] = [];
  let fence: string | undefined;
  let commandTable = false;
  /** The paragraph or bullet being read: its first line and its text. */
  let block: { line: number; text: string } | undefined;
  const flush = () => {
    if (block) code.push(...blockCode(block, isCommandsGuide(file)));
    block = undefined;
  };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? "";
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker?.startsWith(fence)) fence = undefined;
      else {
        // A shell line continued with `\` is one command.
        let text = line;
        const start = index;
        while (text.endsWith("\\") && index + 1 < lines.length) {
          index++;
          text = `${text.slice(0, -1)} ${lines[index]}`;
        }
        code.push({ line: start + 1, text, bareCommand: false });
      }
      continue;
    }
    if (marker) {
      flush();
      fence = marker;
      continue;
    }
    if (/^\s*\|/.test(line)) {
      flush();
      const cells = line.split(/(?<!\\)\|/).slice(1, -1);
      const first = cells[0]?.trim() ?? "";
      if (/^[-: ]+$/.test(first)) continue;
      if (!commandTable && first === "command" && isCommandsGuide(file)) {
        commandTable = true;
        continue;
      }
      for (const [at, cell] of cells.entries())
        for (const span of spansOf(cell.replace(/\\\|/g, "|")))
          code.push({ line: index + 1, text: span.text, bareCommand: commandTable && at === 0 });
      continue;
    }
    commandTable = false;
    if (line.trim() === "" || /^\s*#/.test(line) || /^\s*([-*]|\d+\.) /.test(line)) flush();
    if (line.trim() === "") continue;
    if (block) block.text += `\n${line}`;
    else block = { line: index + 1, text: line };
  }
  flush();
  return code;
}

/**
 * The spans of a paragraph or a bullet (a span may wrap over lines). In
 * docs/commands.md, a bullet's first span is a command line, and a later one
 * starting with a flag is a flag of that command.
 */
function blockCode(block: { line: number; text: string }, commandsGuide: boolean): Code[] {
  const spans = spansOf(block.text);
  const bullet = commandsGuide && /^\s*- `/.test(block.text);
  const owner = bullet ? (spans[0]?.text.split(/\s/)[0] ?? "") : "";
  return spans.map((span, at) => {
    const line = block.line + (block.text.slice(0, span.at).match(/\n/g)?.length ?? 0);
    if (bullet && at === 0) return { line, text: span.text, bareCommand: true };
    if (bullet && span.text.startsWith("--")) return { line, text: `${owner} ${span.text}`, bareCommand: true };
    return { line, text: span.text, bareCommand: false };
  });
}

/** The code spans of some Markdown, each with its offset; a span's line breaks are spaces. */
function spansOf(text: string): Array<{ text: string; at: number }> {
  return [...text.matchAll(/(`+)(?!`)([\s\S]+?)(?<!`)\1(?!`)/g)].map((match) => ({
    text: (match[2] ?? "").replace(/\s*\n\s*/g, " "),
    at: match.index ?? 0,
  }));
}

/** Environment variables, which are UPPER_SNAKE too, start with one of these: none is an event kind. */
const VARIABLE_PREFIXES = ["CONCLAVE_", "OTEL_", "OPENAI_", "NATS_", "BENCH_"];

/**
 * Whether an UPPER_SNAKE word reads as an event kind: its last word is a past
 * participle (`…ED`) or one of the last words of `kinds` (`MADE`, `START`,
 * `CHUNK`, `WARNING`, …), and it names no environment variable.
 */
export function looksLikeEvent(word: string, kinds: readonly string[]): boolean {
  if (VARIABLE_PREFIXES.some((prefix) => word.startsWith(prefix))) return false;
  const last = word.split("_").at(-1) ?? "";
  return last.endsWith("ED") || kinds.some((kind) => kind.split("_").at(-1) === last);
}

/** Where `conclave` starts a command: a word of its own, not part of a path, package or subject. */
const CONCLAVE = /(?<![\w/@.$-])conclave[ \t]+(?=[\w|-])/g;

/** `text` up to where its shell command ends: a pipe, `&&`, `;`, a redirection or a comment outside brackets. */
function commandText(text: string): string {
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const char = text[at] ?? "";
    if ("([{<".includes(char)) depth++;
    else if (")]}>".includes(char) && depth > 0) depth--;
    else if (depth === 0 && (char === ";" || char === ")" || (/\s/.test(text[at - 1] ?? "") && "|&>#".includes(char))))
      return text.slice(0, at);
  }
  return text;
}

/** The commands and flags one piece of code names: `conclave <word> … --flag …`. */
function commandsIn(code: Code): Array<{ command: string; flags: string[] }> {
  const starts = code.bareCommand ? [0] : [...code.text.matchAll(CONCLAVE)].map((m) => (m.index ?? 0) + m[0].length);
  return starts.flatMap((start) => {
    let rest = code.text.slice(start);
    const inner = rest.search(/(?<![\w/@.$-])conclave[ \t]/);
    if (inner > 0) rest = rest.slice(0, inner);
    // Quoted text is a message or another program's arguments: not this command's flags.
    rest = commandText(rest.replace(/"[^"]*"?|'[^']*'?/g, '""'));
    const words = rest.split(/[\s[\]()|]+/).filter((word) => word !== "");
    const first = rest.trimStart().split(/[\s[\]()]+/)[0] ?? "";
    const global = first.startsWith("-");
    const commands = global ? [""] : first.split("|").filter((word) => /^[a-z][a-z0-9-]*$/.test(word));
    if (!global && commands.length !== first.split("|").length) return [];
    const flags: string[] = [];
    for (const word of global ? words : words.slice(first.split("|").length)) {
      if (word === "--") break;
      const flag = /^(--[a-z][a-z0-9-]*|-[a-zA-Z])(?:=|$)/.exec(word)?.[1];
      if (flag) flags.push(flag);
    }
    return commands.map((command) => ({ command, flags }));
  });
}

/** Every command, flag and event kind `markdown` (the guide `file`) names; `kinds` are the real event kinds. */
export function mentionsIn(markdown: string, file: string, kinds: readonly string[]): Mention[] {
  const mentions: Mention[] = [];
  for (const code of codeOf(markdown, file)) {
    const at = { file, line: code.line, code: code.text };
    for (const { command, flags } of commandsIn(code)) {
      if (command !== "") mentions.push({ ...at, type: "command", name: command });
      for (const flag of flags) mentions.push({ ...at, type: "flag", name: flag, command });
    }
    for (const match of code.text.matchAll(/(?<![\w$.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w(])/g))
      if (looksLikeEvent(match[0], kinds)) mentions.push({ ...at, type: "event", name: match[0] });
  }
  return mentions;
}

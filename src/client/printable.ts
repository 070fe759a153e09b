/**
 * Text from the bus or from a store (a user's message, an agent's output, a
 * ledger statement, an error a peer wrote) shown on a person's terminal.
 * Whoever wrote it may have put terminal control sequences in it: an escape
 * (`ESC ] 0 ; title BEL` retitles the window, `ESC [ 2 J` clears the screen,
 * OSC 52 writes the clipboard, OSC 8 hides a link), a carriage return that
 * overwrites what a line said, or a bidi override that shows the characters
 * of a line in another order than they are stored.
 *
 * Every human-readable output of the CLI and the chat passes such text
 * through {@link printable}; `--json` output needs nothing more, since
 * JSON.stringify already writes C0 controls as `\u001b`-style escapes.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS_AND_NEWLINES = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** A character as the escape that names it: `\x1b` up to U+00FF, else `\u202e`. */
const visible = (character: string): string => {
  const code = character.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
};

/**
 * `text` made safe to write to a terminal: every C0 control character (except
 * tab, and newline unless `newlines` is false), DEL, every C1 control
 * (U+0080–U+009F) and the bidi embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069) are shown as visible escapes: ESC as `\x1b`,
 * BEL as `\x07`, RLO as `\u202e`. A CRLF line end counts as a newline.
 * Everything else is left as it is, so applying it twice changes nothing.
 *
 * `newlines: false` is for text that must stay on its line (one line per fact,
 * per item): a newline in it would print what looks like another entry.
 */
export function printable(text: string, options: { newlines?: boolean } = {}): string {
  if (options.newlines === false) return text.replace(CONTROLS_AND_NEWLINES, visible);
  return text.replace(/\r\n/g, "\n").replace(CONTROLS, visible);
}

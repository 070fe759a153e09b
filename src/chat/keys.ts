import type { ChatAction } from "./state.ts";

/** The parts of a keypress the chat reads (ink's `Key` has them all). */
export interface KeyPress {
  return: boolean;
  backspace: boolean;
  delete: boolean;
  ctrl: boolean;
  meta: boolean;
  escape: boolean;
  tab: boolean;
  upArrow: boolean;
  downArrow: boolean;
  leftArrow: boolean;
  rightArrow: boolean;
  pageUp: boolean;
  pageDown: boolean;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: a pasted text's control characters are dropped
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

/**
 * What a keypress (or a pasted text) means to the chat: Enter sends, Backspace
 * erases, Ctrl-U empties the line, Ctrl-C interrupts; a paste holding line
 * breaks types each line and sends it. Other keys (arrows, Tab, Escape) do
 * nothing.
 */
export function keyActions(input: string, key: KeyPress): ChatAction[] {
  if (key.ctrl && input === "c") return [{ type: "interrupted" }];
  if (key.ctrl && input === "u") return [{ type: "cleared" }];
  if (key.return) return [{ type: "submitted" }];
  if (key.backspace || key.delete) return [{ type: "erased" }];
  if (key.ctrl || key.meta || key.escape || key.tab) return [];
  if (key.upArrow || key.downArrow || key.leftArrow || key.rightArrow || key.pageUp || key.pageDown) return [];
  const actions: ChatAction[] = [];
  const lines = input.split(/\r\n|\r|\n/);
  lines.forEach((line, index) => {
    const text = line.replace(CONTROL, "");
    if (text) actions.push({ type: "typed", text });
    if (index < lines.length - 1) actions.push({ type: "submitted" });
  });
  return actions;
}

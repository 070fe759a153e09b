/**
 * The chat as an ink app: the view of the controller's state, redrawn on
 * every change, with the keyboard feeding the controller. Ctrl-C reaches the
 * app as a key (raw mode), never as a signal, so the controller decides
 * whether it cancels a turn or quits.
 */
import { render, useInput } from "ink";
import { createElement as h, type ReactElement, useSyncExternalStore } from "react";
import type { ChatController } from "./controller.ts";
import { keyActions } from "./keys.ts";
import { ChatView } from "./view.ts";

/** The chat's root component. */
export function ChatApp({ controller }: { controller: ChatController }): ReactElement {
  const state = useSyncExternalStore(controller.subscribe, controller.getState);
  useInput((input, key) => {
    for (const action of keyActions(input, key)) controller.dispatch(action);
  });
  return h(ChatView, { state });
}

/** A chat on screen: `quit()` takes it down (restoring the terminal), `exited` settles once it is down. */
export interface ChatScreen {
  quit(): void;
  exited: Promise<void>;
}

/** Draws the chat on the process's terminal (stdin and stdout must be a TTY). */
export function showChat(controller: ChatController): ChatScreen {
  const instance = render(h(ChatApp, { controller }), { exitOnCtrlC: false });
  return {
    quit: () => instance.unmount(),
    exited: instance.waitUntilExit().then(() => undefined),
  };
}

/**
 * The chat's screen, drawn with ink from the view model alone (no I/O, no
 * keys): the conversation history above (ink's Static, so it scrolls into the
 * terminal's scrollback), then the running (or last) turn, the input line and
 * the status line. React without JSX: `h` is React.createElement. Every
 * text a turn or the runtime supplied (messages, replies, agents' notes,
 * critics' feedback, warnings) is drawn through `printable`: ink passes
 * escape sequences through, and the terminal is not theirs to command.
 */
import { Box, Static, Text } from "ink";
import { createElement as h, type ReactElement } from "react";
import { printable } from "../client/printable.ts";
import { type ChatMessage, type ChatState, stageMarks, statusLine } from "./state.ts";
import { type AgentMark, isSettled, outcomeLine, type TurnView } from "./turnView.ts";

/** The most of the thinking stream the live panel shows (its latest characters). */
const THINKING_TAIL = 240;

const MARK = { done: "✓", running: "▸", pending: "·", failed: "✗", stopped: "✗" } as const;
const COLOR = { done: "green", running: "yellow", pending: "gray", failed: "red", stopped: "yellow" } as const;

/** A labelled row: the label in a fixed column, the content wrapping beside it. */
const row = (label: string, ...content: (ReactElement | string)[]) =>
  h(
    Box,
    { key: label, flexDirection: "row" },
    h(Box, { width: 10, flexShrink: 0 }, h(Text, { dimColor: true }, label)),
    h(
      Box,
      { flexGrow: 1, flexWrap: "wrap", columnGap: 2 },
      ...content.map((part, index) =>
        typeof part === "string" ? h(Text, { key: String(index) }, printable(part)) : part,
      ),
    ),
  );

const mark = (key: string, status: keyof typeof MARK, text: string) =>
  h(Text, { key, color: COLOR[status] }, `${MARK[status]} ${printable(text)}`);

function Message({ message }: { message: ChatMessage }): ReactElement {
  const text = printable(message.text);
  if (message.role === "user") return h(Text, null, h(Text, { bold: true, color: "cyan" }, "you › "), text);
  if (message.role === "assistant")
    return h(Text, null, h(Text, { bold: true, color: "magenta" }, "conclave › "), text);
  const color = message.tone === "error" ? "red" : message.tone === "warning" ? "yellow" : "gray";
  return h(Text, { color }, `  ${text}`);
}

/** An agent still running when its turn ended never answered: shown as not done, not as running. */
const agentMark = (agent: AgentMark, ended: boolean) =>
  mark(
    `${agent.wave}:${agent.id}`,
    agent.status === "running" ? (ended ? "pending" : "running") : agent.status,
    agent.note ? `${agent.id} (${agent.note})` : agent.id,
  );

/** The running (or last) turn: stages, agents, rounds, council, streams, critics, warnings, outcome. */
export function TurnPanel({ turn }: { turn: TurnView }): ReactElement {
  const ended = isSettled(turn);
  const title = `turn ${turn.turnId ?? "…"}${turn.attempt > 1 ? ` · attempt ${turn.attempt}` : ""}`;
  const rows: ReactElement[] = [
    h(Text, { key: "title", dimColor: true }, `── ${title} ──`),
    row("stage", ...stageMarks(turn).map(({ stage, mark: status }) => mark(stage, status, stage))),
  ];
  if (turn.agents.length > 0) rows.push(row("agents", ...turn.agents.map((agent) => agentMark(agent, ended))));
  if (turn.rounds.length > 0)
    rows.push(
      row(
        "rounds",
        ...turn.rounds.map((round) =>
          h(
            Text,
            { key: `round ${round.round}` },
            `round ${round.round}: consensus ${round.consensus === null ? "…" : round.consensus.toFixed(2)}` +
              (round.claims === null ? "" : ` (${round.claims} claims)`) +
              (round.revised > 0 ? `, ${round.revised} revised` : "") +
              (round.done ? " ✓" : ""),
          ),
        ),
      ),
    );
  if (turn.council)
    rows.push(
      row(
        "council",
        `${turn.council.speak ? "speak" : "stay silent"} · intent ${turn.council.intent} · urgency ${turn.council.urgency}`,
      ),
    );
  if (!ended && turn.thinking) {
    const tail = turn.thinking.length > THINKING_TAIL ? `…${turn.thinking.slice(-THINKING_TAIL)}` : turn.thinking;
    rows.push(row("thinking", h(Text, { key: "t", dimColor: true, italic: true }, printable(tail))));
  }
  if (!ended && turn.reply) rows.push(row("reply", h(Text, { key: "r" }, printable(turn.reply))));
  if (turn.critics.length > 0)
    rows.push(
      row(
        "critics",
        ...turn.critics.map((verdict) =>
          h(
            Text,
            { key: `attempt ${verdict.attempt}` },
            h(Text, { bold: true }, `#${verdict.attempt} ${verdict.passed ? "passed" : "rejected"}: `),
            ...verdict.results.map((result, index) =>
              h(
                Text,
                { key: result.critic, color: result.passed ? "green" : "red" },
                printable(
                  `${index > 0 ? " · " : ""}${result.passed ? `✓ ${result.critic}` : `✗ ${result.critic}: ${result.feedback}`}`,
                ),
              ),
            ),
          ),
        ),
      ),
    );
  const alerts = [
    ...turn.alerts,
    ...turn.warnings.map(
      (warning) =>
        `${warning.stage}: ${warning.code}${warning.subject ? ` (${warning.subject})` : ""}: ${warning.message}`,
    ),
  ];
  if (alerts.length > 0)
    rows.push(
      h(
        Box,
        { key: "warnings", flexDirection: "row" },
        h(Box, { width: 10, flexShrink: 0 }, h(Text, { dimColor: true }, "warnings")),
        h(
          Box,
          { flexDirection: "column", flexGrow: 1 },
          ...alerts.map((alert, index) => h(Text, { key: String(index), color: "yellow" }, `! ${printable(alert)}`)),
        ),
      ),
    );
  const outcome = outcomeLine(turn);
  if (outcome)
    rows.push(
      row(
        "outcome",
        h(
          Text,
          {
            key: "o",
            color:
              turn.outcome?.status === "Complete"
                ? "green"
                : turn.outcome?.status === "Failed" || (!turn.outcome && turn.stopped !== "cancelled")
                  ? "red"
                  : "yellow",
          },
          printable(outcome),
        ),
      ),
    );
  return h(Box, { flexDirection: "column", marginTop: 1 }, ...rows);
}

/** The whole screen for `state`. */
export function ChatView({ state }: { state: ChatState }): ReactElement {
  const busy = state.phase !== "idle";
  return h(
    Box,
    { flexDirection: "column" },
    h(Static<ChatMessage>, {
      items: state.history,
      // biome-ignore lint/correctness/noChildrenProp: Static's child is a render function, which createElement's children (ReactNode) cannot type
      children: (message: ChatMessage) => h(Box, { key: message.id }, h(Message, { message })),
    }),
    state.turn ? h(TurnPanel, { turn: state.turn }) : null,
    h(
      Box,
      { marginTop: 1 },
      h(Text, { color: busy ? "gray" : "cyan", bold: true }, "› "),
      h(Text, null, printable(state.input)),
      h(Text, { inverse: true }, " "),
    ),
    h(Text, { dimColor: true }, printable(statusLine(state))),
  );
}

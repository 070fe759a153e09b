import type { TaskItemStatus } from "../../contracts/ledger.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { blockerLine, itemLine, LEDGER_FLAGS, ledgerCommand, show, taskLines, withClient } from "../ledgerView.ts";

const help = `conclave task: a session's task ledger (spec, items, blockers)

Usage:
  conclave task spec    --session ID "goal" [--constraint TEXT]... [--acceptance TEXT]...
  conclave task add     --session ID "title" [--id ID] [--status S]
  conclave task update  --session ID ITEM_ID [--title TEXT] [--status S] [--note TEXT]
  conclave task block   --session ID "what blocks" [--item ITEM_ID] [--id ID]
  conclave task unblock --session ID BLOCKER_ID [--resolution TEXT]
  conclave task state   --session ID

  --session ID   the session
  --status S     todo, doing, done or dropped
  --user-id ID   the end user the change is made for: recorded as made by
                 user:ID (without it, by user)
  --json         the answer as JSON

Every change is an event on the session's log (conclave replay --session ID
folds the ledgers again and compares). Ids of items and blockers default to
ones derived from their text, so adding the same item twice changes nothing.
Exit 2 for an unknown item or blocker (not_found) or an item id taken by
another title (conflict).`;

const STATUSES = new Set(["todo", "doing", "done", "dropped"]);

function statusArg(value: string | undefined): TaskItemStatus | undefined {
  if (value === undefined) return undefined;
  if (!STATUSES.has(value)) throw new UsageError("--status must be todo, doing, done or dropped");
  return value as TaskItemStatus;
}

export default defineCommand({
  help,
  flags: {
    ...LEDGER_FLAGS,
    id: { type: "string" },
    constraint: { type: "string", multiple: true },
    acceptance: { type: "string", multiple: true },
    status: { type: "string" },
    title: { type: "string" },
    note: { type: "string" },
    item: { type: "string" },
    resolution: { type: "string" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const { verb, words, text, session, forUser } = ledgerCommand(values, positionals);
    const status = statusArg(values.status);
    const needText = (example: string) => {
      if (!text) throw new UsageError(`give the text, e.g. ${example}`);
    };
    const needId = (what: string, example: string) => {
      if (words.length !== 1) throw new UsageError(`give the ${what}'s id, e.g. ${example}`);
      return words[0] as string;
    };
    switch (verb) {
      case "spec": {
        needText('conclave task spec --session S "migrate the API to v2"');
        const task = await withClient(bus, (client) =>
          client.task.setSpec(
            session,
            { goal: text, constraints: values.constraint ?? [], acceptance: values.acceptance ?? [] },
            forUser,
          ),
        );
        show(values.json, task, taskLines(task));
        return 0;
      }
      case "add": {
        needText('conclave task add --session S "write the tests"');
        const item = await withClient(bus, (client) =>
          client.task.addItem(
            session,
            { title: text, ...(values.id !== undefined ? { id: values.id } : {}), ...(status ? { status } : {}) },
            forUser,
          ),
        );
        show(values.json, item, [itemLine(item)]);
        return 0;
      }
      case "update": {
        const id = needId("item", "conclave task update --session S item-… --status done");
        const item = await withClient(bus, (client) =>
          client.task.updateItem(
            session,
            {
              id,
              ...(values.title !== undefined ? { title: values.title } : {}),
              ...(status ? { status } : {}),
              ...(values.note !== undefined ? { note: values.note } : {}),
            },
            forUser,
          ),
        );
        show(values.json, item, [itemLine(item)]);
        return 0;
      }
      case "block": {
        needText('conclave task block --session S "waiting for the API key"');
        const blocker = await withClient(bus, (client) =>
          client.task.recordBlocker(
            session,
            {
              message: text,
              ...(values.item !== undefined ? { item_id: values.item } : {}),
              ...(values.id !== undefined ? { id: values.id } : {}),
            },
            forUser,
          ),
        );
        show(values.json, blocker, [blockerLine(blocker)]);
        return 0;
      }
      case "unblock": {
        const id = needId("blocker", "conclave task unblock --session S blocker-…");
        const blocker = await withClient(bus, (client) =>
          client.task.resolveBlocker(session, id, {
            ...forUser,
            ...(values.resolution !== undefined ? { resolution: values.resolution } : {}),
          }),
        );
        show(values.json, blocker, [blockerLine(blocker)]);
        return 0;
      }
      case "state": {
        const task = await withClient(bus, (client) => client.task.getState(session));
        show(values.json, task, taskLines(task), "the task ledger is empty");
        return 0;
      }
      default:
        throw new UsageError(`unknown task command '${verb ?? ""}': spec, add, update, block, unblock or state`);
    }
  },
});

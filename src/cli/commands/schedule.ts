import { readFileSync } from "node:fs";
import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import type { ScheduleChanges, ScheduleSpec, ScheduleView } from "../../client/schedules.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import { parseRecipeText } from "../../recipes/load.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { inputArg } from "./run.ts";

const help = `conclave schedule: turns or recipe runs fired at a time, at an interval, or on a cron expression

Usage:
  conclave schedule create ID --session S (--text T | --recipe FILE [--input JSON])
                           (--at TIME | --every MS [--start TIME] | --cron EXPR [--tz ZONE])
                           [--converge JSON] [--catch-up N] [--json]
  conclave schedule update ID [--text T | --recipe FILE [--input JSON]] [--at … | --every … | --cron …]
                           [--converge JSON] [--catch-up N] [--json]
  conclave schedule cancel ID [--json]
  conclave schedule list [--session S] [--json]

  --at TIME       once, at an ISO date-time or epoch ms
  --every MS      every MS milliseconds (at least 100), counted from --start (default: now)
  --cron EXPR     on a cron expression (5 or 6 fields), in --tz (an IANA zone, default UTC)
  --converge JSON stop once this holds after a run, e.g.
                  '{"all_of":[{"path":"outcome.status","eq":"Complete"},{"path":"blackboard.score","gte":0.9}]}'
  --catch-up N    after downtime, fire at most N missed runs (default 1); the rest are deferred
  --json          the schedule(s) as JSON, one per line

Each line: the id, its status (active, cancelled, converged, done), the
session, when and what it fires, how often it fired (and deferred), and its
next due time. See docs/schedules.md.`;

/** A time flag: an ISO date-time or epoch ms. */
function timeArg(flag: string, value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new UsageError(`--${flag} must be an ISO date-time or epoch ms, not '${value}'`);
  return ms;
}

function jsonArg(flag: string, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new UsageError(`--${flag} is not JSON: ${(error as Error).message}`);
  }
}

type Values = Record<string, string | boolean | undefined>;

function whatOf(values: Values): ScheduleSpec["what"] | undefined {
  if (typeof values.text === "string" && typeof values.recipe === "string")
    throw new UsageError("give --text or --recipe, not both");
  if (typeof values.text === "string") return { text: values.text };
  if (typeof values.recipe !== "string") return undefined;
  let text: string;
  try {
    text = readFileSync(values.recipe, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${values.recipe}: ${(error as Error).message}`);
  }
  const document = parseRecipeText(text, values.recipe) as JsonObject;
  return { recipe: { document, inputs: inputArg(typeof values.input === "string" ? values.input : undefined) } };
}

function whenOf(values: Values): ScheduleSpec["when"] | undefined {
  const given = (["at", "every", "cron"] as const).filter((flag) => typeof values[flag] === "string");
  if (given.length > 1) throw new UsageError("give one of --at, --every, --cron");
  if (typeof values.at === "string") return { at: timeArg("at", values.at) };
  const start = typeof values.start === "string" ? { start_ms: timeArg("start", values.start) } : {};
  if (typeof values.every === "string") {
    const every = Number(values.every);
    if (!Number.isInteger(every) || every < 100)
      throw new UsageError("--every must be a whole number of ms, at least 100");
    return { every_ms: every, ...start };
  }
  if (typeof values.cron === "string")
    return { cron: values.cron, ...(typeof values.tz === "string" ? { tz: values.tz } : {}), ...start };
  return undefined;
}

function changesOf(values: Values): ScheduleChanges {
  const what = whatOf(values);
  const when = whenOf(values);
  const catchUp = values["catch-up"];
  const catchUpMax = typeof catchUp === "string" ? Number(catchUp) : undefined;
  if (catchUpMax !== undefined && !(Number.isInteger(catchUpMax) && catchUpMax >= 0))
    throw new UsageError("--catch-up must be a whole number from 0");
  return {
    ...(what ? { what } : {}),
    ...(when ? { when } : {}),
    ...(typeof values.converge === "string"
      ? { convergence: jsonArg("converge", values.converge) as ScheduleChanges["convergence"] }
      : {}),
    ...(catchUpMax !== undefined ? { catch_up_max: catchUpMax } : {}),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One readable line for a schedule. */
export function scheduleLine(view: ScheduleView): string {
  const { intent } = view;
  const when =
    "at" in intent.when
      ? `at ${iso(intent.when.at)}`
      : "every_ms" in intent.when
        ? `every ${intent.when.every_ms} ms`
        : `cron '${intent.when.cron}' ${intent.when.tz ?? "UTC"}`;
  const what =
    "text" in intent.what ? `turn "${intent.what.text}"` : `recipe ${recipeName(intent.what.recipe.document)}`;
  const fires = `fired ${view.fires}${view.deferred > 0 ? `, deferred ${view.deferred}` : ""}`;
  const next = view.next_due ? `next ${iso(view.next_due)}` : "next —";
  const converges = intent.convergence ? "  until converged" : "";
  return printable(
    `${intent.id}  ${view.status}  session ${intent.session_id}  ${when}  ${what}  ${fires}  ${next}${converges}`,
    {
      newlines: false,
    },
  );
}

function recipeName(document: JsonObject): string {
  const metadata = document.metadata as { name?: unknown } | undefined;
  return typeof metadata?.name === "string" ? metadata.name : "(unnamed)";
}

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    text: { type: "string" },
    recipe: { type: "string" },
    input: { type: "string" },
    at: { type: "string" },
    every: { type: "string" },
    start: { type: "string" },
    cron: { type: "string" },
    tz: { type: "string" },
    converge: { type: "string" },
    "catch-up": { type: "string" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const [verb, id, ...extra] = positionals;
    if (extra.length > 0) throw new UsageError(`unexpected '${extra.join(" ")}'`);
    const needId = () => {
      if (!id) throw new UsageError(`give the schedule's id: conclave schedule ${verb} ID`);
      return id;
    };
    const client = await connect({ nc: await bus() });
    const show = (views: ScheduleView[]) => {
      for (const view of views) console.log(values.json ? JSON.stringify(view) : scheduleLine(view));
    };
    switch (verb) {
      case "create": {
        const scheduleId = needId();
        if (!values.session) throw new UsageError("give the session: --session S");
        const changes = changesOf(values);
        if (!changes.what) throw new UsageError("give what it fires: --text T or --recipe FILE");
        if (!changes.when) throw new UsageError("give when: --at TIME, --every MS or --cron EXPR");
        show([
          await client.schedules.create({
            id: scheduleId,
            session_id: values.session,
            ...changes,
            what: changes.what,
            when: changes.when,
          }),
        ]);
        return 0;
      }
      case "update":
        show([await client.schedules.update(needId(), changesOf(values))]);
        return 0;
      case "cancel":
        show([await client.schedules.cancel(needId())]);
        return 0;
      case "list": {
        if (id) throw new UsageError(`unexpected '${id}': filter with --session`);
        const views = await client.schedules.list(values.session);
        show(views);
        if (!values.json && views.length === 0) console.log("no schedules");
        return 0;
      }
      default:
        throw new UsageError(
          verb
            ? `unknown verb '${verb}': create, update, cancel or list`
            : "give a verb: create, update, cancel or list",
        );
    }
  },
});

import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { checkComposePlan, checkSkillId, consumesOf } from "../../client/skills.ts";
import { setting } from "../../config/load.ts";
import { messageOf } from "../../errors.ts";
import { skillsEmbedder } from "../../skills/agentSkills.ts";
import { loadSkills } from "../../skills/load.ts";
import { SKILL_ROUTER_DEFAULTS, SkillRouter } from "../../skills/router.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave skills: the skills of a directory, and which a message loads

Usage: conclave skills list [--dir DIR] [--json]
       conclave skills select "MESSAGE" [--dir DIR] [--threshold X] [--max N] [--json]
       conclave skills outputs --session S SKILL [--consumed] [--dir DIR] [--json]
       conclave skills active --session S [--json]
       conclave skills activate SESSION SKILL [--json]
       conclave skills deactivate SESSION SKILL [--json]
       conclave skills plan SKILL [SKILL …] [--dir DIR] [--json]
       conclave skills refresh [--json]

Skills are read from DIR (default: CONCLAVE_SKILLS_DIR, else ./skills): YAML or
JSON files of one SkillDefinition each, and markdown files whose YAML front
matter is the definition and whose body its instructions (and of
subdirectories: their SKILL.md, e.g. skills/pdf/SKILL.md).

list     every skill: id, load strategy, name, and a lazy one's trigger intent.
select   which skills MESSAGE loads, with the ranking that explains it: eager
         skills always; lazy ones whose trigger intent is within --threshold
         cosine similarity of the message (default ${SKILL_ROUTER_DEFAULTS.threshold}), at most --max
         (default ${SKILL_ROUTER_DEFAULTS.maxLazy}); user ones the message names (/id, or the name).
         Embeddings: CONCLAVE_EMBEDDING_MODEL's model on the LLM's server when
         set (not 'offline'), else the offline embedder (hashed topics: it
         matches shared words, not meaning).
outputs  the outputs SKILL's completions recorded on session S's log
         (accepted ones, oldest first; refusals are not outputs). With
         --consumed: the outputs of the skills SKILL consumes (its
         \`consumes\` field, read from DIR), by skill.
active   the skills active in session S: activated for the session (client,
         with who asked), activated by an agent and not completed since, or
         loaded in its latest turn.
activate records SKILL as active for SESSION (SESSION_SKILL_ACTIVATED on its
         log, through a runner): from its next turn on, every agent on a
         worker with SKILL is given it whatever the message routes to, until
         deactivate, or an agent completes it. A worker without SKILL warns
         once and the turn goes on.
deactivate ends that (SESSION_SKILL_DEACTIVATED).
plan     checks a compose plan: the SKILLs in the order they run. Valid when
         every skill is in DIR and every skill one consumes (its \`consumes\`
         field) is an earlier step; else each problem on a line, naming the
         step, the skill and the missing input, and exit status 1.
refresh  has every worker with skills re-read its skills directory (through
         a runner): a line per worker with the skills added (+), removed (-)
         and changed (~). A worker whose directory no longer loads keeps its
         skills and says why in one line; then the exit status is 1.`;

export default defineCommand({
  help,
  positionals: true,
  flags: {
    dir: { type: "string" },
    json: { type: "boolean" },
    threshold: { type: "string" },
    max: { type: "string" },
    session: { type: "string", short: "s" },
    consumed: { type: "boolean" },
  },
  // Only `outputs` and `active` (they read a session's log), `activate`, `deactivate` and `refresh` (they ask a
  // runner) connect.
  role: "client",
  async run({ values, positionals, bus }) {
    const [action, ...rest] = positionals;
    const dir = values.dir ?? setting(process.env, "CONCLAVE_SKILLS_DIR") ?? "skills";
    if (action === "list") {
      if (rest.length > 0) throw new UsageError("skills list takes no message");
      const skills = loadSkills(dir);
      for (const { definition } of skills) {
        if (values.json) console.log(JSON.stringify(definition));
        else
          console.log(
            printable(
              `${definition.id.padEnd(28)} ${definition.load_strategy.padEnd(6)} ${definition.name}${definition.trigger_intent ? `  (when: ${definition.trigger_intent})` : ""}`,
              { newlines: false },
            ),
          );
      }
      if (skills.length === 0 && !values.json) console.error(`no skills in ${dir}`);
      return EXIT.ok;
    }
    if (action === "outputs" || action === "active") {
      if (!values.session) throw new UsageError(`skills ${action} needs --session S`);
      const session = sessionArg(values.session);
      if (action === "active" && rest.length > 0) throw new UsageError("skills active takes no skill");
      if (action === "outputs" && rest.length !== 1)
        throw new UsageError("skills outputs needs one skill: conclave skills outputs --session S SKILL");
      const skill = rest[0] ?? "";
      // Checked before connecting: a skill the directory lacks is one line, not a wait on NATS.
      const consumes = values.consumed ? consumesOf(skill, { dir }) : undefined;
      const client = await connect({ nc: await bus() });
      if (action === "active") {
        const active = await client.skills.getActive(session);
        if (values.json) console.log(JSON.stringify(active));
        else if (active.length === 0) console.error(`no skill is active in ${session}`);
        for (const entry of values.json ? [] : active)
          console.log(
            printable(
              `${entry.skill.padEnd(28)} ${entry.via} (${entry.via === "client" ? `by ${entry.by}, ${entry.at}` : `turn ${entry.turn_id}`})`,
              { newlines: false },
            ),
          );
        return EXIT.ok;
      }
      const outputs = consumes
        ? await client.skills.getConsumedOutputs(session, skill, { consumes })
        : { [skill]: await client.skills.getOutputs(session, skill) };
      if (values.json) {
        console.log(JSON.stringify(consumes ? outputs : outputs[skill]));
        return EXIT.ok;
      }
      for (const [name, list] of Object.entries(outputs)) {
        if (list.length === 0) console.log(printable(`${name}: no output recorded`, { newlines: false }));
        for (const entry of list)
          console.log(
            printable(`${name} (turn ${entry.turn_id}, ${entry.agent_id}): ${JSON.stringify(entry.output)}`, {
              newlines: false,
            }),
          );
      }
      if (consumes && consumes.length === 0) console.error(`${skill} consumes no skill`);
      return EXIT.ok;
    }
    if (action === "activate" || action === "deactivate") {
      if (rest.length !== 2) throw new UsageError(`usage: conclave skills ${action} SESSION SKILL`);
      const session = sessionArg(rest[0]!);
      // Checked before connecting: a bad skill id is a usage error, not a request.
      let skill: string;
      try {
        skill = checkSkillId(rest[1]);
      } catch (error) {
        throw new UsageError(messageOf(error));
      }
      const client = await connect({ nc: await bus() });
      const change = await (action === "activate"
        ? client.skills.activate(session, skill)
        : client.skills.deactivate(session, skill));
      if (values.json) console.log(JSON.stringify({ session_id: session, ...change }));
      else {
        const state = change.active
          ? change.changed
            ? "activated: its next turn's agents are given it"
            : "already active"
          : change.changed
            ? "deactivated"
            : "was not active";
        console.log(printable(`skill ${skill} in session ${session}: ${state}`, { newlines: false }));
      }
      return EXIT.ok;
    }
    if (action === "refresh") {
      if (rest.length > 0) throw new UsageError("skills refresh takes no argument");
      const client = await connect({ nc: await bus() });
      const reply = await client.skills.refresh();
      if (values.json) console.log(JSON.stringify(reply));
      else if (reply.workers.length === 0) console.error("no worker with skills answered");
      for (const report of values.json ? [] : reply.workers) {
        const change = report.error
          ? `not refreshed, its skills stay as they were: ${report.error}`
          : [
              ...report.added.map((id) => `+${id}`),
              ...report.removed.map((id) => `-${id}`),
              ...report.changed.map((id) => `~${id}`),
            ].join(" ") || "no change";
        console.log(printable(`${report.worker} ${report.dir}: ${change}`, { newlines: false }));
      }
      return reply.workers.some((report) => report.error) ? EXIT.turnFailed : EXIT.ok;
    }
    if (action === "plan") {
      if (rest.length === 0) throw new UsageError("skills plan needs the plan's skills: conclave skills plan A B C");
      const check = checkComposePlan(rest, { dir });
      if (values.json) console.log(JSON.stringify(check));
      else if (check.valid) console.log(printable(`valid: ${rest.join(" → ")}`, { newlines: false }));
      else for (const problem of check.problems) console.log(printable(problem.message, { newlines: false }));
      return check.valid ? EXIT.ok : EXIT.turnFailed;
    }
    if (action !== "select")
      throw new UsageError(
        "give 'list', 'select \"MESSAGE\"', 'outputs', 'active', 'activate', 'deactivate', 'plan' or 'refresh'",
      );
    const message = rest.join(" ").trim();
    if (!message) throw new UsageError('skills select needs a message: conclave skills select "…"');
    const options = {
      threshold: numberFlag("--threshold", values.threshold, 0, 1) ?? SKILL_ROUTER_DEFAULTS.threshold,
      maxLazy: numberFlag("--max", values.max, 0, 100) ?? SKILL_ROUTER_DEFAULTS.maxLazy,
    };
    const router = await SkillRouter.index(loadSkills(dir), skillsEmbedder(), options);
    const selection = await router.select(message);
    if (values.json) {
      console.log(
        JSON.stringify({
          loaded: selection.loaded.map((skill) => skill.definition.id),
          threshold: selection.threshold,
          embedder: selection.embedder,
          ranking: selection.ranking,
        }),
      );
      return EXIT.ok;
    }
    const loaded = selection.loaded.map((skill) => skill.definition.id);
    console.log(`loaded: ${loaded.length > 0 ? loaded.join(", ") : "none"}  (embedder ${selection.embedder})`);
    for (const rank of selection.ranking)
      console.log(printable(`${rank.loaded ? "+" : " "} ${rank.id.padEnd(28)} ${rank.why}`, { newlines: false }));
    return EXIT.ok;
  },
});

function numberFlag(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number < min || number > max)
    throw new UsageError(`${name} must be a number from ${min} to ${max}, not '${value}'`);
  return number;
}

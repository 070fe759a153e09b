import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { factLine, LEDGER_FLAGS, ledgerCommand, show, withClient } from "../ledgerView.ts";

const help = `conclave truth: a session's truth ledger (facts held true, with evidence)

Usage:
  conclave truth upsert  --session ID "statement" [--id ID] [--evidence TEXT]... [--confidence 0..1]
  conclave truth resolve --session ID FACT_ID [--resolution TEXT]
  conclave truth query   --session ID ["text"] [--status active|resolved|all] [--limit N]
  conclave truth digest  --session ID
  conclave truth state   --session ID

  --session ID   the session
  --user-id ID   the end user the change is made for: recorded as made by
                 user:ID (without it, by user)
  --json         the answer as JSON

Every change is an event on the session's log (conclave replay --session ID
folds the ledgers again and compares). upsert records a fact, or updates the
one with its id: by default the id comes from the statement, so the same
statement is the same fact, and more evidence is appended to it. resolve marks
a fact no longer held. query lists facts about the text first. digest is what
agents get in their context. Exit 2 for an unknown fact (not_found).`;

export default defineCommand({
  help,
  flags: {
    ...LEDGER_FLAGS,
    id: { type: "string" },
    evidence: { type: "string", multiple: true },
    confidence: { type: "string" },
    resolution: { type: "string" },
    status: { type: "string" },
    limit: { type: "string" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const { verb, words, text, session, forUser } = ledgerCommand(values, positionals);
    switch (verb) {
      case "upsert": {
        if (!text) throw new UsageError('give the statement, e.g. conclave truth upsert --session S "the API is v2"');
        const confidence = values.confidence === undefined ? undefined : Number(values.confidence);
        if (confidence !== undefined && !(confidence >= 0 && confidence <= 1))
          throw new UsageError("--confidence must be a number from 0 to 1");
        const fact = await withClient(bus, (client) =>
          client.truth.upsertFact(
            session,
            {
              statement: text,
              ...(values.id !== undefined ? { id: values.id } : {}),
              ...(values.evidence ? { evidence: values.evidence } : {}),
              ...(confidence !== undefined ? { confidence } : {}),
            },
            forUser,
          ),
        );
        show(values.json, fact, [factLine(fact)]);
        return 0;
      }
      case "resolve": {
        if (words.length !== 1)
          throw new UsageError("give the fact's id, e.g. conclave truth resolve --session S fact-…");
        const fact = await withClient(bus, (client) =>
          client.truth.resolveFact(session, words[0] as string, {
            ...forUser,
            ...(values.resolution !== undefined ? { resolution: values.resolution } : {}),
          }),
        );
        show(values.json, fact, [factLine(fact)]);
        return 0;
      }
      case "query": {
        const status = values.status ?? "active";
        if (status !== "active" && status !== "resolved" && status !== "all")
          throw new UsageError("--status must be active, resolved or all");
        const limit = Number(values.limit ?? 20);
        if (!Number.isInteger(limit) || limit < 1 || limit > 200)
          throw new UsageError("--limit must be a whole number from 1 to 200");
        const facts = await withClient(bus, (client) =>
          client.truth.queryLedger(session, { ...(text ? { text } : {}), status, limit }),
        );
        show(values.json, facts, facts.map(factLine), "no fact matches");
        return 0;
      }
      case "digest": {
        const digest = await withClient(bus, (client) => client.truth.getLedgerDigest(session));
        show(values.json, digest, digest.text ? digest.text.split("\n") : [], "both ledgers are empty");
        return 0;
      }
      case "state": {
        const truth = await withClient(bus, (client) => client.truth.getState(session));
        show(values.json, truth, truth.facts.map(factLine), "the truth ledger is empty");
        return 0;
      }
      default:
        throw new UsageError(`unknown truth command '${verb ?? ""}': upsert, resolve, query, digest or state`);
    }
  },
});

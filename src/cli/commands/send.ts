import { connect } from "../../client/client.ts";
import { TurnFailedError } from "../../client/turns.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";
import { pipelineOption } from "../pipelineOption.ts";
import { createEventPrinter } from "../render.ts";

const help = `conclave send: publish a user turn and stream its events as they happen

Usage: conclave send --session <id> [options] "text"

  --session ID          session to talk in (A-Z a-z 0-9 _ -, up to 64 characters)
  --json                print each event as one JSON line instead of a readable view
  --user-id ID          who is speaking (stored with the turn)
  --idempotency-key K   a key that identifies this submission
  --timeout MS          how long to wait for the turn to complete   [60000]
  --pipeline P          the pipeline of this turn and the session's later ones (stored with
                        the session): cognitive, agents (only your agents: one agent's answer
                        is the reply), agents+council, or recipe:FILE (the recipe runs each
                        turn, the message as its input 'message')   [the session's, else the runner's]

Ctrl-C cancels the turn (it ends Cancelled). A turn that completes (Complete or
PartialSuccess) with a reply, or without one because the council chose silence,
exits 0, its warnings printed (a reply the deterministic council or voice gave when
the model or its worker failed is named by a council_fallback or voice_fallback
warning); one that ends without a reply otherwise, ends Failed or Cancelled, is refused as busy or interrupted, or does not complete
within --timeout, exits 1;
a submission the runner finds invalid exits 2; no runner answering exits 3; a turn that
suspends because an agent's tool call waits for approval exits 5 (answer it with conclave approve).`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    json: { type: "boolean" },
    "user-id": { type: "string" },
    "idempotency-key": { type: "string" },
    timeout: { type: "string" },
    pipeline: { type: "string" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const session = sessionArg(values.session);
    const text = positionals.join(" ");
    if (!text.trim()) throw new UsageError('give the message to send, e.g. conclave send --session demo "hello"');
    const timeoutMs = Number(values.timeout ?? 60_000);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new UsageError("--timeout must be a positive number of milliseconds");
    const pipeline = pipelineOption(values.pipeline);

    const nc = await bus();
    const cancel = new AbortController();
    const interrupted = () => cancel.abort("cancelled from the command line (Ctrl-C)");
    process.once("SIGINT", interrupted);
    try {
      const client = await connect({ nc });
      const turn = client.submit(session, text, {
        signal: cancel.signal,
        timeoutMs,
        ...(values["user-id"] ? { userId: values["user-id"] } : {}),
        ...(values["idempotency-key"] ? { idempotencyKey: values["idempotency-key"] } : {}),
        ...(pipeline ? { pipeline } : {}),
      });
      const print = createEventPrinter(values.json);
      let silenceChosen = false;
      for await (const event of turn) {
        print(event);
        if (event.kind === "COUNCIL_DECISION_MADE") silenceChosen = !event.payload.speak;
      }
      const { outcome, response, turnId } = await turn.result;
      if (outcome.status === "Cancelled") return EXIT.turnFailed;
      if (response.trim() === "") {
        // Silence the council chose is an answer; silence from a fault no fallback covered is not.
        if (silenceChosen) {
          process.stderr.write(`turn ${session}/${turnId}: the council chose not to reply\n`);
          return EXIT.ok;
        }
        throw new TurnFailedError(session, turnId, { code: "no_reply", message: "the turn ended without a reply" });
      }
      return EXIT.ok;
    } finally {
      process.off("SIGINT", interrupted);
    }
  },
});

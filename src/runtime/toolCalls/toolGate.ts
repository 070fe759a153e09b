import { randomUUID } from "node:crypto";
import type { Msg, NatsConnection, Subscription } from "@nats-io/nats-core";
import type { AgentDirectory } from "../../agents/directory.ts";
import { asHandlerError, errorReply, HandlerError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { requestJson } from "../../bus/request.ts";
import { subjects } from "../../bus/subjects.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import {
  type DelegateRequest,
  GateRequest,
  type ModelStepRecord,
  ToolCallReply,
  type ToolGateReply,
  type ToolGateRequest,
  type ToolOutputRead,
} from "../../contracts/tool.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import { inContextOf } from "../../telemetry/natsHeaders.ts";
import { tracingActive } from "../../telemetry/tracer.ts";
import { Slots } from "./slots.ts";
import { ToolOutputs } from "./toolOutputs.ts";
import { type ToolHost, TurnToolCalls, type TurnTools } from "./turnToolCalls.ts";

/**
 * The runner's end of agents' tool calls (`conclave.toolgate.<token>`, one
 * token per runner): a worker running an agent asks here for each tool call
 * and sends each model step to record; the turn's TurnToolCalls decides,
 * records and makes the call on `conclave.tool.<name>` (the workers hosting
 * the tool, one of them per call), holding the session's parallel slots.
 */
export class ToolGate {
  readonly subject = subjects.toolGate(randomUUID().replaceAll("-", ""));
  readonly #turns = new Map<string, TurnToolCalls>();
  readonly #slots = new Map<string, Slots>();
  /** Large results, stored by reference (`conclave_tool_outputs`). */
  readonly #outputs: ToolOutputs;
  #subscription: Subscription | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly directory: Promise<AgentDirectory>,
  ) {
    this.#outputs = new ToolOutputs(nc);
  }

  /** The model steps an earlier attempt of the turn recorded for this agent call (empty: none). */
  replayOf(sessionId: string, turnId: number, callKey: string): unknown[] {
    return this.#turns.get(`${turnKey(sessionId, turnId)}`)?.replayOf(callKey) ?? [];
  }

  /** Lets a turn's agents call tools; returns what ends it. */
  openTurn(sessionId: string, turnId: number, tools: TurnTools): () => void {
    this.#subscription ??= this.nc.subscribe(this.subject, {
      callback: (error, msg) => {
        // Traced, the tool call it makes continues the asking agent's trace.
        if (!error) void (tracingActive() ? inContextOf(msg.headers, () => this.#answer(msg)) : this.#answer(msg));
      },
    });
    const key = `${turnKey(sessionId, turnId)}`;
    const outputs = this.#outputs;
    const turn = new TurnToolCalls({
      ...tools,
      storeOutput: tools.storeOutput ?? ((callId, result) => outputs.shrink(sessionId, turnId, callId, result)),
    });
    this.#turns.set(key, turn);
    return () => {
      turn.close();
      if (this.#turns.get(key) === turn) this.#turns.delete(key);
    };
  }

  close(): void {
    this.#subscription?.unsubscribe();
    this.#subscription = null;
  }

  async #answer(msg: Msg): Promise<void> {
    try {
      const request = decodeMessage(msg, GateRequest, `tool call on ${msg.subject}`);
      const turn = this.#turns.get(`${turnKey(request.session_id, request.turn_id)}`);
      if (!turn)
        throw new HandlerError("not_found", `turn ${request.session_id}/${request.turn_id} is not running here`);
      const kind = (request as { kind?: unknown }).kind;
      const reply: ToolGateReply =
        kind === "model_step"
          ? await turn.step(request as ModelStepRecord)
          : kind === "delegate"
            ? await turn.delegate(request as DelegateRequest)
            : kind === "read_output"
              ? await this.#read(request as ToolOutputRead)
              : await turn.call(request as ToolGateRequest, this.#host(request.session_id));
      if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
    } catch (error) {
      // An error body without service headers: requestJson reads it as the remote's error.
      const failure = asHandlerError(error, "tool call failed");
      if (isInboxReply(msg.reply, "runner"))
        respondJson(msg, errorReply(failure.code, failure.message, failure.issues));
    }
  }

  /** A slice of a large result stored in this turn (a read is not a step: nothing is recorded). */
  async #read(request: ToolOutputRead): Promise<ToolGateReply> {
    const slice = await this.#outputs.read(request, request.handle, request.offset, request.length);
    return { ok: true, call_id: request.handle, result: slice };
  }

  /** Tools as the workers host them, for one session's calls. */
  #host(sessionId: string): ToolHost {
    return {
      manifest: async (name) => (await this.directory).tool(name),
      slots: (size) => {
        let slots = this.#slots.get(sessionId);
        if (!slots || (slots.size !== size && !slots.busy)) {
          slots = new Slots(size);
          this.#slots.set(sessionId, slots);
        }
        return slots;
      },
      invoke: (call, signal) =>
        requestJson(this.nc, subjects.tool(call.tool), call, ToolCallReply, {
          timeoutMs: call.timeout_ms + 1_000,
          signal,
        }),
      released: () => {
        const slots = this.#slots.get(sessionId);
        if (slots && !slots.busy) this.#slots.delete(sessionId);
      },
    };
  }
}

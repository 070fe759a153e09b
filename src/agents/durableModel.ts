import type { z } from "zod";
import type {
  ChatModel,
  CompleteRequest,
  CompleteResult,
  StreamPart,
  StreamRequest,
  StructuredRequest,
  StructuredResult,
  TextStream,
} from "../contracts/model.ts";
import type { ModelStepMethod } from "../contracts/tool.ts";
import { noUsage, type Usage } from "../contracts/usage.ts";
import { LazyTextStream } from "../llm/textStream.ts";

/** Stores one model step (the runner records it on the turn's log) and resolves once it is stored. */
export type RecordStep = (step: {
  index: number;
  method: ModelStepMethod;
  result: unknown;
  usage: Usage;
}) => Promise<void>;

/** A step as the runner gives it back (`AgentRequest.replay.model[n]`): its method and what it returned. */
interface Recorded {
  method: ModelStepMethod;
  result: unknown;
}

const isRecorded = (value: unknown): value is Recorded =>
  typeof value === "object" && value !== null && "method" in value && "result" in value;

/**
 * A ChatModel whose calls are durable steps of one agent call: the n-th call
 * is answered from `replay[n]` when an earlier attempt of the turn recorded
 * it (same method), else made and then recorded through `record` before its
 * result is returned, so the agent goes on only from stored steps. A replay
 * that no longer matches (the agent now calls another method) is dropped
 * from there: those calls are made again. Calls are numbered in the order
 * the agent makes them; an agent that makes model calls concurrently gets
 * its steps numbered in the order they finish.
 */
export function durableModel(model: ChatModel, replay: readonly unknown[], record: RecordStep): ChatModel {
  let next = 0;
  let replaying = true;
  const take = (method: ModelStepMethod): { index: number; recorded?: unknown } => {
    const index = next++;
    const step = replaying ? replay[index] : undefined;
    if (isRecorded(step) && step.method === method) return { index, recorded: step.result };
    replaying = false;
    return { index };
  };
  const store = async <T>(index: number, method: ModelStepMethod, result: T, usage: Usage): Promise<T> => {
    await record({ index, method, result, usage });
    return result;
  };
  return {
    model: model.model,
    structured: async <S extends z.ZodType>(request: StructuredRequest<S>): Promise<StructuredResult<z.infer<S>>> => {
      const step = take("structured");
      if ("recorded" in step) return { value: request.schema.parse(step.recorded), usage: noUsage(), attempts: 0 };
      const done = await model.structured(request);
      await store(step.index, "structured", done.value, done.usage);
      return done;
    },
    complete: async (request: CompleteRequest): Promise<CompleteResult> => {
      const step = take("complete");
      if ("recorded" in step) return { ...(step.recorded as Omit<CompleteResult, "usage">), usage: noUsage() };
      const done = await model.complete(request);
      await store(step.index, "complete", { content: done.content, toolCalls: done.toolCalls }, done.usage);
      return done;
    },
    stream: (request: StreamRequest): TextStream => {
      const step = take("text");
      return new LazyTextStream(async function* (sink): AsyncGenerator<StreamPart, void, undefined> {
        if ("recorded" in step) {
          // A recorded text comes back whole, as one piece.
          if (typeof step.recorded === "string" && step.recorded !== "")
            yield { type: "content", delta: step.recorded };
          return;
        }
        const parts = model.stream(request);
        let text = "";
        for await (const part of parts) {
          if (part.type === "content") text += part.delta;
          yield part;
        }
        sink.usage = await parts.usage;
        await store(step.index, "text", text, sink.usage);
      });
    },
  };
}

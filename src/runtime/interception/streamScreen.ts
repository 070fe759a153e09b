import type { StreamId } from "../../contracts/council.ts";
import { type Interception, type InterceptorContext, type ResponseInterceptor, screenPacket } from "./interceptors.ts";

/** Text released by a stream screen, once screened (null when an interceptor blocked it), and what was done. */
export interface Released {
  text: string | null;
  interceptions: Interception[];
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** One interceptor of the chain with the text it holds back. */
interface Stage {
  readonly interceptor: ResponseInterceptor;
  pending: string;
}

/**
 * Screens one stream as it arrives, through the response chain as a
 * pipeline: each interceptor keeps back the tail it says could still become
 * something it acts on (`holdBack`), screens the rest with `onPacket`, and
 * hands what it released to the next interceptor; at the end each releases
 * what it held. For interceptors whose `holdBack` honours its contract, the
 * concatenated output is the chain applied to the whole text, whatever the
 * packet boundaries; an interceptor without `holdBack` sees the text packet
 * by packet, as it was released to it.
 */
export class StreamScreen {
  readonly #stages: Stage[];

  constructor(
    chain: readonly ResponseInterceptor[],
    private readonly streamId: StreamId,
    private readonly context: InterceptorContext,
  ) {
    this.#stages = chain.map((interceptor) => ({ interceptor, pending: "" }));
  }

  /** Takes a packet; returns what may be sent now (empty text when everything is held back). */
  push(delta: string): Released {
    return this.#run(delta, false);
  }

  /** The stream ended: releases whatever is held back. */
  flush(): Released {
    return this.#run("", true);
  }

  #run(delta: string, end: boolean): Released {
    let text = delta;
    const interceptions: Interception[] = [];
    for (const stage of this.#stages) {
      stage.pending += text;
      const final = this.#release(stage, end);
      if (final === "") {
        text = "";
        continue;
      }
      const screened = screenPacket([stage.interceptor], { stream_id: this.streamId, delta: final }, this.context);
      interceptions.push(...screened.interceptions);
      // A block drops this released text only; later text of the stream is screened as it comes.
      if (screened.delta === null) return { text: null, interceptions };
      text = screened.delta;
    }
    return { text, interceptions };
  }

  /** Takes from a stage's pending text what can no longer change. */
  #release(stage: Stage, end: boolean): string {
    let cut = end ? stage.pending.length : stage.pending.length - (stage.interceptor.holdBack?.(stage.pending) ?? 0);
    // Never split a character made of two UTF-16 units (an emoji) between two packets.
    if (!end && cut > 0 && isHighSurrogate(stage.pending.charCodeAt(cut - 1))) cut -= 1;
    if (cut <= 0) return "";
    const final = stage.pending.slice(0, cut);
    stage.pending = stage.pending.slice(cut);
    return final;
  }
}

import type { StreamId } from "../../contracts/council.ts";
import { type Interception, type InterceptorContext, type ResponseInterceptor, screenPacket } from "./interceptors.ts";

/** Text released by a stream screen, once screened (null when an interceptor blocked it), and what was done. */
export interface Released {
  text: string | null;
  interceptions: Interception[];
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * Screens one stream as it arrives: keeps back the smallest tail that any
 * interceptor says could still become a match (`holdBack`), releases the
 * rest through the response chain, and releases the tail at the end.
 * Concatenated, what it releases is the chain applied to the whole text, for
 * interceptors whose `holdBack` covers every match that could still grow.
 */
export class StreamScreen {
  #pending = "";

  constructor(
    private readonly chain: readonly ResponseInterceptor[],
    private readonly streamId: StreamId,
    private readonly context: InterceptorContext,
  ) {}

  /** Takes a packet; returns what may be sent now (empty text when everything is held back). */
  push(delta: string): Released {
    this.#pending += delta;
    let hold = 0;
    for (const interceptor of this.chain) hold = Math.max(hold, interceptor.holdBack?.(this.#pending) ?? 0);
    let cut = this.#pending.length - hold;
    // Never split a character made of two UTF-16 units (an emoji) between two packets.
    if (cut > 0 && isHighSurrogate(this.#pending.charCodeAt(cut - 1))) cut -= 1;
    return this.#release(cut);
  }

  /** The stream ended: releases whatever is held back. */
  flush(): Released {
    return this.#release(this.#pending.length);
  }

  #release(cut: number): Released {
    if (cut <= 0) return { text: "", interceptions: [] };
    const final = this.#pending.slice(0, cut);
    this.#pending = this.#pending.slice(cut);
    const screened = screenPacket(this.chain, { stream_id: this.streamId, delta: final }, this.context);
    return { text: screened.delta, interceptions: screened.interceptions };
  }
}

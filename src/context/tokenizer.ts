/**
 * Token counting for the context arena, with the real BPE encodings of
 * OpenAI's models (gpt-tokenizer: pure JS, its rank tables ship inside the
 * package, nothing is downloaded at run time; chosen over js-tiktoken, which
 * counts the same, for its footprint: cl100k_base loads in ~60 ms and adds
 * ~40 MB to a process, js-tiktoken's ~200 ms and ~110 MB).
 *
 * A model name maps to its encoding: `o200k_base` for the gpt-4o, gpt-4.1,
 * gpt-5 and o-series families, `cl100k_base` for gpt-4 and gpt-3.5. Any other
 * model (a local Llama, Mistral, Claude behind a proxy…) is counted with
 * `cl100k_base` as an approximation: other BPE vocabularies of that size give
 * counts within some ten per cent of it on English text, and the budget's
 * ratios leave that much room. `tokenizerFor(model).exact` says which case a
 * count is.
 *
 * An encoding's rank table is a few megabytes: it is loaded the first time a
 * count needs it, once per process. gpt-tokenizer is an optional peer (it
 * installs some 30 MB): without it every model is counted with the
 * {@link BYTES_PER_TOKEN} approximation (UTF-8 bytes ÷ 4, within some twenty
 * per cent of a BPE count on English text), and `exact` is false.
 */
import { createRequire } from "node:module";

/** The encodings the arena counts with. */
export type EncodingName = "o200k_base" | "cl100k_base";

/** The encoding used for a model the table does not know (see the module's note). */
export const APPROXIMATE_ENCODING: EncodingName = "cl100k_base";

/** Model name prefixes and their encodings, most specific first. */
const MODEL_ENCODINGS: ReadonlyArray<readonly [RegExp, EncodingName]> = [
  [/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o1|o3|o4|gpt-oss)/, "o200k_base"],
  [/^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada-002)/, "cl100k_base"],
];

/** Counts the tokens of a text in one encoding. */
export interface Tokenizer {
  /** The model's encoding, or {@link BYTES_PER_TOKEN} without gpt-tokenizer. */
  readonly encoding: EncodingName | typeof BYTES_PER_TOKEN;
  /** True when the encoding is the model's own; false when it approximates an unknown model. */
  readonly exact: boolean;
  /** How many tokens the text is in this encoding (special-token text counted as ordinary text). */
  count(text: string): number;
  /** The text cut to its first `maxTokens` tokens (the text itself when it has no more). */
  truncate(text: string, maxTokens: number): string;
  /** Loads the encoding now (a process's start), rather than in the first count. */
  warm(): void;
}

/** The encoding of a model (its provider prefix, `openai/gpt-4o`, is ignored), and whether it is the model's own. */
export function encodingFor(model: string | undefined): { encoding: EncodingName; exact: boolean } {
  const name = (model ?? "").toLowerCase().replace(/^.*\//, "");
  for (const [pattern, encoding] of MODEL_ENCODINGS) if (pattern.test(name)) return { encoding, exact: true };
  return { encoding: APPROXIMATE_ENCODING, exact: false };
}

const require = createRequire(import.meta.url);

/** What the arena uses of one gpt-tokenizer encoding module. */
interface Encoder {
  encode(text: string, options?: { disallowedSpecial?: Set<string> }): number[];
  decode(tokens: number[]): string;
}

const loaded = new Map<EncodingName, Encoder>();

/** The encoding named when gpt-tokenizer is not installed: see the module's note. */
export const BYTES_PER_TOKEN = "utf8_bytes/4";

/** The encoder of an encoding, loaded (synchronously, once) on first use. */
function encoder(encoding: EncodingName): Encoder {
  let found = loaded.get(encoding);
  if (found === undefined) {
    found = require(`gpt-tokenizer/encoding/${encoding}`) as Encoder;
    loaded.set(encoding, found);
  }
  return found;
}

/** The approximation without gpt-tokenizer: a token per four bytes of UTF-8. */
export const approximateTokenizer: Tokenizer = {
  encoding: BYTES_PER_TOKEN,
  exact: false,
  warm: () => {},
  count: (text) => Math.ceil(Buffer.byteLength(text) / 4),
  truncate: (text, maxTokens) => {
    if (Buffer.byteLength(text) <= maxTokens * 4) return text;
    return Buffer.from(text)
      .subarray(0, Math.max(0, maxTokens * 4))
      .toString("utf8")
      .replace(/\uFFFD+$/, "");
  },
};

/** Special-token text ("<|endoftext|>") in user content is ordinary text: never refused. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The tokenizer of a model (see the module's note for models it does not know). */
export function tokenizerFor(model?: string): Tokenizer {
  const { encoding, exact } = encodingFor(model);
  if (!installed()) return approximateTokenizer;
  const bpe = () => encoder(encoding) as Encoder;
  return {
    encoding,
    exact,
    count: (text) => (text.length === 0 ? 0 : bpe().encode(text, AS_TEXT).length),
    truncate: (text, maxTokens) => {
      const tokens = bpe().encode(text, AS_TEXT);
      if (tokens.length <= maxTokens) return text;
      // A cut inside a multi-byte character leaves a replacement character: dropped.
      return bpe()
        .decode(tokens.slice(0, Math.max(0, maxTokens)))
        .replace(/\uFFFD+$/, "");
    },
    warm: () => void bpe(),
  };
}

let isInstalled: boolean | undefined;
/** gpt-tokenizer can be loaded (looked up once; its tables are loaded only when a count needs them). */
function installed(): boolean {
  if (isInstalled === undefined) {
    try {
      require.resolve("gpt-tokenizer/encoding/cl100k_base");
      isInstalled = true;
    } catch {
      isInstalled = false;
    }
  }
  return isInstalled;
}

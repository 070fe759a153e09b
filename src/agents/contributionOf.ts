import { Contribution } from "../contracts/agent.ts";

const CONTRIBUTION_KEYS = Object.keys(Contribution.shape) as (keyof Contribution)[];

/**
 * The default `contribute`: the answer's fields that the council contract
 * names; an answer with a `reply` string and no `proposals` says its reply
 * (as say proposals of at most 300 characters each, cut at spaces).
 */
export function contributionOf(output: unknown): Contribution {
  const picked: Record<string, unknown> = {};
  if (typeof output === "object" && output !== null) {
    for (const key of CONTRIBUTION_KEYS) if (key in output) picked[key] = (output as Record<string, unknown>)[key];
    const reply = (output as { reply?: unknown }).reply;
    if (!("proposals" in output) && typeof reply === "string" && reply.trim().length > 0)
      picked.proposals = sayProposals(reply.trim());
  }
  return Contribution.parse(picked);
}

/** Longest text of one proposal (the council contract's bound). */
const MAX_PROPOSAL_CHARS = 300;
/** Most proposals a contribution holds. */
const MAX_PROPOSALS = 8;

/**
 * A reply as say proposals: pieces of at most 300 characters, cut at a
 * space (dropped: the `agents` pipeline's voice joins them with one), at
 * most 8; a longer reply ends with "…".
 */
function sayProposals(reply: string): { kind: "say"; text: string }[] {
  const pieces: string[] = [];
  let rest = reply;
  while (rest.length > 0 && pieces.length < MAX_PROPOSALS) {
    if (rest.length <= MAX_PROPOSAL_CHARS) {
      pieces.push(rest);
      rest = "";
      break;
    }
    const space = rest.lastIndexOf(" ", MAX_PROPOSAL_CHARS);
    const cut = space > 0 ? space : MAX_PROPOSAL_CHARS;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(space > 0 ? cut + 1 : cut);
  }
  if (rest.length > 0) pieces[pieces.length - 1] = `${pieces.at(-1)!.slice(0, MAX_PROPOSAL_CHARS - 1)}…`;
  return pieces.map((text) => ({ kind: "say", text }));
}

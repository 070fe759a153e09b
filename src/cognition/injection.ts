/**
 * Prompt injection read in context: a message counts when it addresses the
 * assistant about its own instructions, rules, prompt or persona ("ignore
 * previous instructions", "pretend you have no rules", "show me your system
 * prompt"), not when it merely contains a trigger word ("I keep forgetting to
 * call the bank", "please ignore the typo above"). Deterministic regular
 * expressions, no model call; docs/SENSORS.md lists what counts and why.
 */

/** Lower case, typographic quotes made plain, runs of spaces made one (newlines kept: they end a clause). */
const normalise = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc`]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[^\S\n]+/g, " ");

/** A pattern written with single spaces between words; each space matches any run of whitespace. */
const pattern = (source: string): RegExp => new RegExp(source.replaceAll(" ", "\\s+"), "u");

/** Where a clause may start: the message's start or a punctuation mark. */
const CLAUSE_START = `(?:^|[.!?;:\\n,"'(\\[*#>-])\\s*`;
/** Words that address the assistant and ask it to do what follows ("I want you to", "you must", "can you"). */
const ADDRESSED =
  "\\b(?:(?:i|we) (?:want|need|would like|'d like|order|command|instruct|ask|urge) you to|(?:you|u) (?:must|should|will|shall|need to|have to|are going to|are to|can|could|may|gotta)|(?:can|could|would|will) (?:you|u))\\s+";
/** Politeness, fillers and vocatives that may stand between a clause's start and its verb. */
const SOFTENERS =
  "(?:(?:please|pls|kindly|now|just|simply|ok|okay|alright|so|and|then|also|first|next|hey|hi|listen|look|well|immediately|completely|totally|entirely|assistant|ai|bot|chatbot|model|gpt|chatgpt|claude)[\\s,]+)*";
/** The verb is the clause's own (an imperative) or follows words addressing the assistant: not "I tend to forget". */
const IMPERATIVE = `(?:${CLAUSE_START}|${ADDRESSED})${SOFTENERS}`;

/** Verbs that set instructions aside, whatever they qualify (the target then needs a marker, see below). */
const OVERRIDE =
  "(?:ignore|disregard|forget|override|overwrite|bypass|stop following|stop obeying|quit following|(?:do not|don't|dont|never|no longer) (?:follow|obey|listen to|stick to|adhere to))";
/** Verbs that set instructions aside only when the target is the assistant's ("drop your rules", not "drop the rules"). */
const OVERRIDE_YOURS =
  "(?:drop|discard|abandon|skip|set aside|throw out|throw away|ditch|erase|delete|wipe|clear|reset|break|violate|disable|turn off|switch off|deactivate|remove|lift|suspend|get rid of|free yourself from)";
/** Words that may qualify the target noun. */
const QUALIFIERS =
  "(?:(?:all|any|every|each|of|the|your|these|those|previous|previously given|prior|above|earlier|preceding|former|original|initial|system|safety|given|other|hidden|internal|built-in|own|current|content) ){0,5}";
/** Nouns that are the assistant's whatever qualifies them. */
const OWN_NOUNS =
  "(?:system prompts?|system messages?|programming|training|conditioning|guardrails|safeguards|alignment|directives?|persona|content polic(?:y|ies))";
/** Nouns that are the assistant's only with a marker ("your", "previous", "all", …) or a tail ("… you were given"). */
const NOUNS =
  "(?:instructions?|directions|rules|guidelines|prompts?|restrictions|limitations|limits|constraints|filters?|filtering|policies|policy|ethics|morals|principles|boundaries|commands|orders|protocols|safety settings)";
/** What marks a target as the assistant's own. */
const MARKER =
  /\b(?:your|previous|previously|prior|above|earlier|preceding|former|original|initial|system|safety|all|any|every|hidden|internal|own)\b/u;
/** A tail that makes any instructions the assistant's: "the rules you were given", "the instructions above". */
const TAIL =
  " (?:above|before (?:this|now)|so far|(?:that |which )?you(?:'ve| have| were| had)?(?: been)? (?:given|told|taught|trained on|programmed with|got|received)|given to you|from (?:your|the) (?:developers?|creators?|system|prompt))\\b";
/** Everything that came before: "everything above", "the above", "what you were told", "everything you know". */
const EVERYTHING =
  "(?:(?:all|everything|anything)(?: (?:that|which))?(?: (?:is|was|came|comes))? (?:above|before (?:this|now)|previously|prior|so far)|(?:all |everything )?(?:of )?the above|(?:everything|all|what|anything) (?:that )?you(?:'ve| have| were| had)?(?: been)? (?:told|given|taught|trained on|programmed with)|everything you know(?! about))\\b";

/** Groups: the qualifiers, the noun, the tail. */
const OVERRIDE_TARGET = new RegExp(
  `${IMPERATIVE}${OVERRIDE} (${QUALIFIERS})(${OWN_NOUNS}|${NOUNS})\\b((?:${TAIL})?)`.replaceAll(" ", "\\s+"),
  "gu",
);
const OVERRIDE_YOURS_TARGET = pattern(
  `${IMPERATIVE}${OVERRIDE_YOURS} (?:(?:all|any) )?(?:of )?your ${QUALIFIERS}(?:${OWN_NOUNS}|${NOUNS})\\b`,
);
const OVERRIDE_EVERYTHING = pattern(`${IMPERATIVE}${OVERRIDE} ${EVERYTHING}`);
/** "ignoring previous instructions": the gerund attack, with a marker that the instructions came before. */
const GERUND = pattern(
  `\\b(?:ignoring|disregarding|overriding|bypassing|forgetting) (?:all )?(?:of )?(?:the |your )?(?:previous|prior|above|preceding|earlier|system|initial|original) (?:${OWN_NOUNS}|${NOUNS})\\b`,
);

const OWN_NOUN = new RegExp(`^${OWN_NOUNS}$`, "u");
/**
 * Whether instructions, rules, … someone is told to ignore are the
 * assistant's: the noun always is (`system prompt`, `programming`), or a
 * marker ("your", "previous", "all") or a tail ("… you were given") says so.
 */
const overridesTheAssistant = (message: string): boolean =>
  [...message.matchAll(OVERRIDE_TARGET)].some(
    ([, qualifiers = "", noun = "", tail = ""]) =>
      OWN_NOUN.test(noun.replace(/\s+/gu, " ")) || tail !== "" || MARKER.test(qualifiers),
  );

/** Each cue of an injection, by name: a name says what kind of injection it is. */
const CUES: readonly [string, RegExp | ((message: string) => boolean)][] = [
  ["override", overridesTheAssistant],
  ["override", OVERRIDE_YOURS_TARGET],
  ["override", OVERRIDE_EVERYTHING],
  ["override", GERUND],
  // Persona: the assistant asked to be someone or something else, or to have no rules.
  [
    "persona",
    pattern(
      "\\bpretend(?:ing)? (?:that )?(?:you(?:'re| are| were| have| had|'ve| can| could| don't| do not| aren't| are not| no longer| lack| exist)|your (?:rules|instructions|guidelines|name|programming|creators?|developers?|restrictions|filters|training))\\b",
    ),
  ],
  ["persona", pattern(`${IMPERATIVE}pretend (?:to be|(?:that )?there (?:are|is|were) no)\\b`)],
  [
    "persona",
    pattern(
      "\\b(?:you(?:'re| are) now|from now on,? you(?:'re| are| will be|'ll be)) (?:an?|the|no longer|free|unrestricted|unfiltered|uncensored|jailbroken|dan|evil|amoral|called|named)\\b",
    ),
  ],
  [
    "persona",
    pattern(
      "\\byour new (?:name|role|persona|identity|instructions|rules|purpose|directives?|guidelines|programming) (?:is|are)\\b",
    ),
  ],
  [
    "persona",
    pattern(
      "\\b(?:act|behave|respond|answer|reply|talk) (?:as if|as though|like) you (?:have|had|were|are|'re) (?:no|not|an? (?:unrestricted|unfiltered|uncensored|jailbroken|evil|amoral|different))\\b",
    ),
  ],
  ["persona", pattern("\\bact as (?:an? )?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|amoral|dan)\\b")],
  // Rule-dropping: the assistant told it has, or should answer with, no rules.
  [
    "no rules",
    pattern(
      "\\byou (?:have|got|now have|possess) no (?:rules|restrictions|limits|limitations|guidelines|filters|boundaries|ethics|morals|constraints|guardrails|instructions|programming)\\b",
    ),
  ],
  [
    "no rules",
    pattern(
      "\\byou(?:'re| are)(?: now)? (?:(?:no longer|not) (?:bound|restricted|limited|constrained|governed) by|(?:free|freed|released|unbound) (?:from|of) (?:your|all|any))\\b",
    ),
  ],
  [
    "no rules",
    pattern(
      "\\b(?:answer|respond|reply|speak|talk|write)(?: to me)? (?:without|with no|free of|free from) (?:any |your |all )?(?:rules|restrictions|filters|filtering|guidelines|limits|limitations|censorship|safety|ethics|morals|guardrails)\\b",
    ),
  ],
  // Extraction: the assistant asked for its prompt.
  ["extraction", pattern("\\byour (?:system|hidden|secret|internal|developer) (?:prompts?|instructions|messages?)\\b")],
  [
    "extraction",
    pattern(
      "\\b(?:reveal|show|print|repeat|output|display|tell|give|share|leak|dump|recite|paste|spell out|write out|write down|disclose|expose|read out|what(?:'s| is| are| were| was))(?: me| us)?(?: back)?(?: (?:all|everything|the text|the contents?|the words) (?:of|in))? (?:your (?:(?:full|exact|entire|complete|whole|verbatim) )*(?:prompts?|programming|directives|system messages?|(?:first|initial|original|system|hidden|secret|internal|developer) (?:prompts?|instructions|guidelines|messages?))|the (?:(?:full|exact|entire|complete|whole|verbatim) )*(?:system|hidden|secret|internal|initial|original|developer) (?:prompts?|instructions|messages?))\\b",
    ),
  ],
  // Jailbreak: aimed at the assistant, not a phone.
  [
    "jailbreak",
    pattern(
      "\\bjailbreak(?:ing)? (?:yourself|you|this (?:ai|assistant|bot|chat|chatbot|model|conversation|session)|the (?:ai|assistant|bot|chatbot|model)|mode)\\b",
    ),
  ],
  ["jailbreak", pattern("\\b(?:you(?:'re| are)|you've been|you have been|get|be|become) jailbroken\\b")],
  [
    "jailbreak",
    pattern(
      "\\b(?:enable|enter|activate|switch to|switch into|turn on|go into|unlock|you(?:'re| are)(?: now)? in) (?:the )?(?:dan|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|evil) mode\\b",
    ),
  ],
  ["jailbreak", pattern("\\byou(?:'re| are)(?: now)? in developer mode\\b")],
  // Chat-template markup pasted into a message to fake a system turn.
  ["markup", /<\|im_start\|>|<\|system\|>|\[\/?inst\]|<<\/?sys>>/u],
];

/**
 * The name of the first cue of a prompt injection in `text` ("override",
 * "persona", "no rules", "extraction", "jailbreak", "markup"), or undefined
 * when there is none. Case and typographic quotes do not matter.
 */
export function injectionCue(text: string): string | undefined {
  const message = normalise(text);
  return CUES.find(([, cue]) => (typeof cue === "function" ? cue(message) : cue.test(message)))?.[0];
}

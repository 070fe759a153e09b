/**
 * Personal data in text: e-mail addresses, phone numbers and card-like
 * numbers (13–19 digits, single spaces or dashes between them, that pass the
 * Luhn check as payment card numbers do), found by one left-to-right scan and
 * replaced with `[email]`, `[phone]`, `[card]`.
 *
 * One pattern, no lookaround: whether a match is final depends only on the
 * characters the scan has read, which is what lets a stream be screened in
 * pieces exactly as the whole text would be (see {@link piiHoldBack}).
 */

const EMAIL = String.raw`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`;
const NUMBER = String.raw`\+?\d[\d\s().-]{7,}\d`;
const PII = new RegExp(`(${EMAIL})|${NUMBER}`, "g");
/** A number written as a card number is: 13–19 digits, single spaces or dashes between them. */
const CARD = /^\d(?:[ -]?\d){12,18}$/;

/** The Luhn checksum, so a long number that is no card number (an order id, a timestamp) is not called one. */
function luhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

const kindOf = (match: string, email: string | undefined): "email" | "card" | "phone" => {
  if (email) return "email";
  return CARD.test(match) && luhn(match.replace(/\D/g, "")) ? "card" : "phone";
};

/** The text with every e-mail address, card-like number and phone number replaced, and what was found. */
export function redactPii(text: string): { text: string; found: string[] } {
  const found: string[] = [];
  const redacted = text.replace(PII, (match: string, email: string | undefined) => {
    const kind = kindOf(match, email);
    found.push(kind);
    return `[${kind}]`;
  });
  return { text: redacted, found };
}

/**
 * Where a scan attempt could still read past the end of the text: a trailing
 * run of e-mail characters (perhaps with `@` and a partial domain), and a
 * trailing number still being written. An attempt starting before both ends
 * where the text does not, so its outcome is final.
 */
const OPEN = [/[\w.+-]+(?:@[\w.-]*)?$/, /\+?\d[\d\s().-]*$|\+$/];

/**
 * How many characters at the end of `text` to hold back so that what comes
 * before can be redacted on its own, now, exactly as the whole stream will
 * be: every scan attempt that could still read further is held, and so is a
 * complete match that would otherwise be cut in two.
 */
export function piiHoldBack(text: string): number {
  let cut = text.length;
  for (const open of OPEN) {
    const match = open.exec(text);
    if (match) cut = Math.min(cut, match.index);
  }
  for (const match of text.matchAll(PII)) {
    if (match.index >= cut) break;
    // Matches do not overlap: at most one spans the cut; it is held whole.
    if (match.index + match[0].length > cut) cut = match.index;
  }
  return text.length - cut;
}

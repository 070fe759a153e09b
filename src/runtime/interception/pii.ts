/**
 * Personal data in text: e-mail addresses, phone numbers and card-like
 * numbers (13–19 digits that pass the Luhn check, as payment card numbers
 * do), found by patterns and replaced with `[email]`, `[phone]`, `[card]`.
 */

const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;
/** 13–19 digits, single spaces or dashes between them allowed. */
const CARD = /(?<![\w])\d(?:[ -]?\d){12,18}(?![\w])/g;
const PHONE = /\+?\d[\d\s().-]{7,}\d/g;

/** The Luhn checksum, so a long number that is no card number (an order id, a timestamp) is left alone. */
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

/** The text with every e-mail address, card-like number and phone number replaced, and what was found. */
export function redactPii(text: string): { text: string; found: string[] } {
  const found: string[] = [];
  const redacted = text
    .replace(EMAIL, () => {
      found.push("email");
      return "[email]";
    })
    .replace(CARD, (match) => {
      if (!luhn(match.replace(/\D/g, ""))) return match;
      found.push("card");
      return "[card]";
    })
    .replace(PHONE, () => {
      found.push("phone");
      return "[phone]";
    });
  return { text: redacted, found };
}

/**
 * Tails of a text that could still grow into a match when more text comes:
 * a trailing word (an e-mail's local part, or one with `@` and a partial
 * domain), and a trailing run of digits and the characters numbers are
 * written with. Any match that touches the end of the text lies inside one of
 * them, so what comes before is final.
 */
const OPEN_EMAIL = /[\w.+-]+(?:@[\w-]*(?:\.[\w-]*)*)?$|[\w.+-]*@[\w-]*(?:\.[\w-]*)*$/;
const OPEN_NUMBER = /\+?\d[\d\s().-]*$|\+$/;

/** How many characters at the end of `text` could still be part of personal data once more text arrives. */
export function piiHoldBack(text: string): number {
  let hold = 0;
  for (const open of [OPEN_EMAIL, OPEN_NUMBER]) {
    const match = open.exec(text);
    if (match) hold = Math.max(hold, match[0].length);
  }
  return hold;
}

/**
 * Secrets kept out of what a store prints: URLs with their password masked,
 * and drivers' error messages scrubbed of it (Redis and PostgreSQL stores).
 */
import { messageOf, singleLine } from "../errors.ts";

/**
 * A URL fit to print: its password replaced by `***` (the user name stays,
 * it helps tell which account failed). Something that does not parse as a URL
 * is not printed at all, since it could be a password pasted in the wrong place.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "<unparsable URL>";
  }
}

/**
 * A driver's error message with the URL's password taken out wherever it
 * appears (drivers may quote their connection string), as one line.
 */
export function scrubbed(error: unknown, url?: string): string {
  let message = messageOf(error);
  if (error instanceof AggregateError && error.errors.length > 0 && !message) {
    // Node reports a refused dual-stack connect as an AggregateError with an empty message.
    message = error.errors.map(messageOf).join("; ");
  }
  if (!message && error instanceof Error && "code" in error) message = String(error.code);
  if (url) {
    try {
      const { password } = new URL(url);
      for (const secret of new Set([password, safeDecode(password)])) {
        if (secret) message = message.split(secret).join("***");
      }
    } catch {
      // not a URL: nothing of it to scrub
    }
  }
  return singleLine(message || "unknown error", 200);
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

import type { z } from "zod";
import { HandlerError } from "./errors.ts";

// fatal: invalid UTF-8 is bad input, not text to repair silently.
const decoder = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

export const encodeJson = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

/** One line per failed field, `path: message`, for error replies people can act on. */
export const describeIssues = (error: z.ZodError): string[] =>
  error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`);

/**
 * Parses and validates a message body, or throws a HandlerError that says
 * exactly what is wrong (bad_json, invalid_request or payload_too_large).
 */
export function decodeJson<S extends z.ZodType>(
  data: Uint8Array,
  schema: S,
  what: string,
  maxBytes = 1_048_576,
): z.infer<S> {
  if (data.length > maxBytes) {
    throw new HandlerError("payload_too_large", `${what} is ${data.length} bytes; the limit is ${maxBytes}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch (error) {
    throw new HandlerError("bad_json", `${what} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    throw new HandlerError("invalid_request", `${what} is invalid: ${issues.join("; ")}`, issues);
  }
  return parsed.data;
}

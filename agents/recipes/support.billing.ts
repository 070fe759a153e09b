import { specialist } from "./specialist.ts";

/** Billing questions: refunds, invoices, charges. */
export const billing = specialist(
  "billing",
  "I have looked at your account: the duplicate charge will be refunded within 5 working days.",
);

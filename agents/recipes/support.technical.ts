import { specialist } from "./specialist.ts";

/** Technical questions: errors, logins, installs. */
export const technical = specialist(
  "technical",
  "Please clear the app's cache and sign in again; if the error stays, send us its code.",
);

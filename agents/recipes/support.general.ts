import { specialist } from "./specialist.ts";

/** Everything else. */
export const general = specialist("general", "Thanks for writing to us: a person from the team will reply today.");

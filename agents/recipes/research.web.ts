import { researcher } from "./researcher.ts";

/** Web sources. */
export const web = researcher("web", ["a vendor announced it", "a blog benchmarked it", "a forum thread doubts it"]);

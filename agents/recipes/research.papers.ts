import { researcher } from "./researcher.ts";

/** The literature. */
export const papers = researcher("papers", [
  "a 2024 survey covers it",
  "one study replicates it",
  "a review is cautious",
]);

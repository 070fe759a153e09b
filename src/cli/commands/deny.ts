import { answer, approvalHelp } from "./approve.ts";

export const help = approvalHelp("deny");

export function run(argv: string[]): Promise<number> {
  return answer(argv, false);
}

import { approvalCommand } from "./approve.ts";

export default approvalCommand("deny");

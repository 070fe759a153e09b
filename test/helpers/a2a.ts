import { type ListTasksRequest, TaskState } from "@a2a-js/sdk";

/** A2A `ListTasks` with no filter: every task the gateway shows the caller. */
export const LIST_ALL_TASKS: ListTasksRequest = {
  tenant: "",
  contextId: "",
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageToken: "",
  statusTimestampAfter: undefined,
};

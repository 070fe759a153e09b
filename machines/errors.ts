import { ConclaveError } from "../src/errors.ts";

/** Raised when the process hosting a machine did not provide one of its actors. */
export class MissingActorError extends ConclaveError<"missing_actor"> {
  /**
   * @param actor the actor's name in the machine's `setup`
   * @param machine the machine's id
   * @param host who must provide it (the runner's "host", a "worker")
   */
  constructor(actor: string, machine = "turn", host = "host") {
    super(
      "missing_actor",
      `${machine} machine: the ${host} must provide the '${actor}' actor with ${machine}Machine.provide()`,
    );
  }
}

import type { JsonObject } from "../../contracts/recipeRun.ts";
import type { TurnServices } from "../turnServices/turnServices.ts";

/** What the request interceptors did to a run's inputs. */
export interface ScreenedInputs {
  inputs: JsonObject;
  interceptions: { interceptor: string; action: "redact" | "block"; reason: string }[];
  blocked: boolean;
}

/** Most string values of one run's inputs that are screened one by one (the rest: as one JSON text). */
const MAX_SCREENED_STRINGS = 200;

/**
 * The request interceptors on a recipe run's inputs, before any agent sees
 * them (the pipeline screens the user's message the same way): every string
 * in the inputs, with the fast sensors' scores of that string, is redacted
 * or refused as the chain decides. Numbers, booleans and keys pass as they
 * are.
 */
export async function screenInputs(
  services: Pick<TurnServices, "screen" | "senseFast">,
  turn: { session_id: string; turn_id: number },
  inputs: JsonObject,
): Promise<ScreenedInputs> {
  const interceptions: ScreenedInputs["interceptions"] = [];
  let blocked = false;
  let screened = 0;
  const screen = async (value: unknown): Promise<unknown> => {
    if (typeof value === "string") {
      if (value.length === 0 || ++screened > MAX_SCREENED_STRINGS) return value;
      const result = await services.screen({ ...turn, text: value, sensors: await services.senseFast(value) });
      interceptions.push(...result.interceptions);
      blocked ||= result.blocked;
      return result.text;
    }
    if (Array.isArray(value)) return Promise.all(value.map(screen));
    if (typeof value === "object" && value !== null) {
      const entries = await Promise.all(
        Object.entries(value).map(async ([key, item]) => [key, await screen(item)] as const),
      );
      return Object.fromEntries(entries);
    }
    return value;
  };
  return { inputs: (await screen(inputs)) as JsonObject, interceptions, blocked };
}

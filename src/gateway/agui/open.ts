/**
 * The lazy door to the AG-UI route: `@ag-ui/core` and `@ag-ui/encoder` are
 * optional packages, imported only when `conclave serve` starts. Without
 * them the gateway still serves MCP, and `/ag-ui` answers 501 saying what to
 * install.
 */
import { importOptional, MissingDependencyError } from "../../optionalPackages.ts";
import { type Route, sendError } from "../http.ts";
import type { AguiRouteOptions } from "./route.ts";

/** The packages AG-UI needs. */
export const AGUI_PACKAGES = ["@ag-ui/core", "@ag-ui/encoder"] as const;

/** The `/ag-ui` route: AG-UI runs, or a 501 naming the packages to install when they are not. */
export async function loadAguiRoute(options: AguiRouteOptions): Promise<Route> {
  try {
    const module = await importOptional("conclave serve (AG-UI)", AGUI_PACKAGES, () => import("./route.ts"));
    return module.aguiRoute(options);
  } catch (error) {
    if (!(error instanceof MissingDependencyError)) throw error;
    const { message } = error;
    return async (request, response) => {
      request.resume();
      sendError(response, 501, error.code, message);
    };
  }
}

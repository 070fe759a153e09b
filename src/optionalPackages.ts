/**
 * Packages Conclave lists as optional peer dependencies (pg, redis, ink and
 * react, @statelyai/inspect): installed only by those who use the feature
 * that needs one, and imported only when that feature runs, so everything
 * else loads without them.
 */
import { ConclaveError } from "./errors.ts";

/** An optional package a feature needs is not installed; the message says what to install. */
export class MissingDependencyError extends ConclaveError<"missing_dependency"> {
  /** The packages to install. */
  readonly packages: readonly string[];
  constructor(feature: string, packages: readonly string[], options?: ErrorOptions) {
    const names = packages.join(" and ");
    super(
      "missing_dependency",
      `${feature} needs the optional package${packages.length > 1 ? "s" : ""} ${names}: npm install ${packages.join(" ")}`,
      options,
    );
    this.packages = packages;
  }
}

/**
 * What `load` imports (the package itself, or the module of ours that imports
 * it), or a MissingDependencyError naming `packages` when one of them is not
 * installed. Any other failure, a missing module that is not one of them
 * included, is thrown as it is.
 */
export async function importOptional<T>(
  feature: string,
  packages: readonly string[],
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = missingPackage(error);
    if (missing !== null && packages.includes(missing))
      throw new MissingDependencyError(feature, packages, { cause: error });
    throw error;
  }
}

/** The package Node could not find (`Cannot find package 'pg' imported from …`), if that is the error. */
function missingPackage(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (!(error instanceof Error) || (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND")) return null;
  return /Cannot find (?:package|module) '([^']+)'/.exec(error.message)?.[1] ?? null;
}

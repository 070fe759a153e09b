// The resolution hook of hidePackages.mjs: a hidden package, or a module of one, is not found,
// with the error Node gives for a package that is not installed.
let hidden = [];

export function initialize(data) {
  hidden = data.hidden;
}

export function resolve(specifier, context, nextResolve) {
  if (hidden.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
    const error = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`);
    throw Object.assign(error, { code: "ERR_MODULE_NOT_FOUND" });
  }
  return nextResolve(specifier, context);
}

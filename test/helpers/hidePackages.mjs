// Preloaded with `node --import` (NODE_OPTIONS): makes the packages named in CONCLAVE_TEST_HIDE_PACKAGES
// (comma-separated) unresolvable for `import`, as if they were not installed, through a real Node
// resolution hook (hidePackagesHooks.mjs). `require` is not hooked: hide only imported packages.
import { register } from "node:module";

const hidden = (process.env.CONCLAVE_TEST_HIDE_PACKAGES ?? "").split(",").filter(Boolean);
register(new URL("./hidePackagesHooks.mjs", import.meta.url), { data: { hidden } });

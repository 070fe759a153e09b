import { checkFeature, type FeatureState, installLine, OPTIONAL_FEATURES } from "../../optionalFeatures.ts";
import { packageVersion } from "../../version.ts";
import { defineCommand } from "../command.ts";

const help = `conclave doctor: which optional features this installation has, and what adds the rest

Usage: conclave doctor [--json]

Conclave's optional features each need optional peer packages, installed only by
those who use them (LLM mode: openai; conclave chat: ink and react; the viewer's
diagrams: elkjs; tracing: the OpenTelemetry SDK; ...). For each feature this says
whether it is available (every package it needs resolves from Conclave's own
location and loads), what happens without it, and then the one npm install line
that adds every missing package.

  --json   one JSON object: {"version", "features":[{id, feature, available,
           without, packages, packageStates:[{name, available, version, problem}],
           install}], "install"} ("install" is null when nothing is missing)

Exits 0 whatever is missing: a feature nobody uses needs nothing.`;

/** The features as aligned text, then the install line. */
function asText(features: FeatureState[], install: string | undefined): string {
  const width = Math.max(...features.map((state) => state.feature.length));
  const lines = [`Conclave ${packageVersion()}: optional features`, ""];
  for (const state of features) {
    const packages = state.packageStates
      .map((one) =>
        one.available ? `${one.name}${one.version ? `@${one.version}` : ""}` : `${one.name} (${one.problem})`,
      )
      .join(", ");
    lines.push(`  ${state.available ? "✓" : "✗"} ${state.feature.padEnd(width)}  ${packages}`);
    if (!state.available) lines.push(`      without it: ${state.without}`);
  }
  const missing = features.filter((state) => !state.available).length;
  lines.push("");
  lines.push(
    install
      ? `${missing} of ${features.length} features need packages. To add them all:\n  ${install}`
      : `All ${features.length} optional features are available.`,
  );
  return lines.join("\n");
}

export default defineCommand({
  help,
  flags: { json: { type: "boolean" } },
  async run({ values }) {
    const features = await Promise.all(OPTIONAL_FEATURES.map(checkFeature));
    const install = installLine(
      features.flatMap((state) => state.packageStates.filter((one) => !one.available).map((one) => one.name)),
    );
    console.log(
      values.json
        ? JSON.stringify({ version: packageVersion(), features, install: install ?? null })
        : asText(features, install),
    );
    return 0;
  },
});

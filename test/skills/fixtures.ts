import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Fifty lazy skills, each with a trigger intent of its own words; `fx.convert` is about currency. */
export const FIFTY_INTENTS: Record<string, string> = {
  "fx.convert": "convert currency exchange rates",
  ...Object.fromEntries(
    [
      "flight booking airline",
      "recipe cooking ingredients",
      "weather forecast rain",
      "invoice billing accounting",
      "poetry rhyme verse",
      "chess opening strategy",
      "garden plants watering",
      "guitar chords tuning",
      "marathon running training",
      "tax return deductions",
      "python debugging traceback",
      "resume cover letter",
      "wedding planning guests",
      "astronomy telescope planets",
      "knitting yarn patterns",
      "mortgage loan interest",
      "translation spanish grammar",
      "photography aperture lighting",
      "podcast audio editing",
      "aquarium fish tank",
      "sourdough bread baking",
      "kubernetes cluster deployment",
      "yoga stretching posture",
      "wine pairing vineyard",
      "bicycle repair gears",
      "genealogy ancestry records",
      "origami paper folding",
      "bird watching species",
      "meditation breathing calm",
      "spreadsheet formulas pivot",
      "carpentry wood joinery",
      "volcano geology lava",
      "piano scales practice",
      "camping tent hiking",
      "coffee espresso grinder",
      "vaccine immunization schedule",
      "fantasy football league",
      "calligraphy ink lettering",
      "drone pilot license",
      "beekeeping hive honey",
      "pottery clay kiln",
      "skateboard tricks ramp",
      "crossword puzzle clues",
      "sushi rice fish",
      "violin bow rosin",
      "sailing boat knots",
      "perfume fragrance notes",
      "robotics servo motor",
      "tattoo design ink",
    ].map((intent, index) => [`skill.${String(index).padStart(2, "0")}`, intent]),
  ),
};

/** A temp directory of skill files; returns its path. */
export function skillsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "conclave-skills-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** The fifty lazy skills as YAML files, plus one eager and one user skill. */
export function fiftySkillsDir(): string {
  const files: Record<string, string> = {};
  for (const [id, intent] of Object.entries(FIFTY_INTENTS))
    files[`${id}.yaml`] =
      `id: ${id}\nname: ${id} helper\ndescription: helps with ${intent}\nload_strategy: lazy\ntrigger_intent: ${intent}\ninstructions: Help with ${intent}.\n`;
  files["house-style.yaml"] =
    "id: house-style\nname: House style\ndescription: how we write\ninstructions: Be brief.\n";
  files["deep-research/SKILL.md"] =
    "---\nid: deep-research\nname: Deep research\ndescription: long investigations\nload_strategy: user\n---\nSearch widely, cite sources.\n";
  return skillsDir(files);
}

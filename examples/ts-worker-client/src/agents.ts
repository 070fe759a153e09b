import { defineAgent } from "conclave/worker";
import { z } from "zod";

/** A typed output: what the agent makes of the user's mood, and what it proposes to the council. */
export const MoodReading = z.object({
  mood: z.enum(["calm", "stressed", "happy", "sad"]),
  intensity: z.number().min(0).max(1),
  proposals: z.array(z.object({ kind: z.enum(["say", "ask", "do_not"]), text: z.string() })).default([]),
});

export const moodTracker = defineAgent({
  name: "mood.tracker",
  description: "Reads the user's mood from the sensors, with a word of support when it is low.",
  priority: "ALWAYS_ON",
  output: MoodReading,
  // Annotated: TypeScript then checks the answer against the schema (and keeps "stressed" a literal).
  run({ input, stream }): z.input<typeof MoodReading> {
    const { vulnerability } = input.sensors;
    const happy = /\b(happy|glad|great|finally)\b/i.test(input.user_message);
    const stressed = vulnerability > 0.3 || /\b(stress|anxious|worried)/i.test(input.user_message);
    const mood = stressed ? "stressed" : happy ? "happy" : "calm";
    stream("reading", `vulnerability ${vulnerability.toFixed(2)} → ${mood}`);
    return {
      mood,
      intensity: mood === "calm" ? 0.2 : Math.max(vulnerability, 0.6),
      proposals: mood === "stressed" ? [{ kind: "say", text: "One step at a time." }] : [],
    };
  },
});

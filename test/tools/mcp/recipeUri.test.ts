import { describe, expect, it } from "vitest";
import { loadRecipe, RecipeValidationError } from "../../../src/recipes/load.ts";
import { mcpToolName } from "../../../src/tools/mcp/names.ts";

/** A workflow whose agent `writer` may call the tool definition `weather`. */
const workflowWith = (weather: Record<string, unknown>) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "mcp-uri" },
  definitions: {
    writer: { type: "agent", id: "acme.writer", tools: ["weather"] },
    weather: { type: "tool", id: "weather", name: "Weather", ...weather },
  },
  workflow: { start: "draft", steps: { draft: { type: "agent", agent: "writer" } } },
});

describe("a recipe tool definition with an mcp:// uri", () => {
  it("binds to the MCP server's tool under its Conclave name (the agent's tools and the declared risk)", () => {
    const recipe = loadRecipe(workflowWith({ uri: "mcp://weather/Get-Weather.v2", risk_level: "critical" }));
    const mapped = mcpToolName("weather", "Get-Weather.v2");
    expect(recipe.nodes[0]).toMatchObject({ tools: [mapped] });
    expect(recipe.tool_risks).toEqual({ [mapped]: "critical" });
  });

  it("that names no tool is refused at load, at the uri", () => {
    let refused: unknown;
    try {
      loadRecipe(workflowWith({ uri: "mcp://weather" }));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RecipeValidationError);
    expect((refused as RecipeValidationError).issues).toEqual([
      {
        path: "definitions.weather.uri",
        message: "'mcp://weather' is not an MCP tool uri: write mcp://<server>/<tool>",
      },
    ]);
  });

  it("leaves other uris to the definition's name, as before", () => {
    const recipe = loadRecipe(workflowWith({ name: "web_search", uri: "https://example.com/search" }));
    expect(recipe.nodes[0]).toMatchObject({ tools: ["web_search"] });
  });
});

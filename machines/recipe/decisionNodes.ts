/** The nodes that only decide where the run goes, with no work of their own: routers and switches. */
import { assign } from "xstate";
import { conditionHolds } from "../../src/recipes/expression.ts";
import { readPath } from "../../src/recipes/paths.ts";
import type { Recipe, RouterNode, SwitchNode } from "../../src/recipes/recipe.ts";
import type { RecipeContext } from "./context.ts";
import { type Args, type Exits, failWith, frame, route, type StateConfig, stateKey } from "./frame.ts";

/** A router: the value at `input_key`, strictly matched against `routes`, then `default_route`. */
export function routerNodeState(recipe: Recipe, node: RouterNode, exits: Exits): StateConfig {
  const { entering } = frame(recipe, node, exits);
  const routedValue = (context: RecipeContext) => readPath(context.blackboard, node.input_key).value;
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: { always: { target: "routing" } },
      routing: {
        always: [
          ...Object.entries(node.routes).map(([value, target]) => ({
            guard: ({ context }: Args) => routeMatches(routedValue(context), value),
            target: exits.to(target),
            actions: [route(node.id, target, `${node.input_key} is '${value}'`)],
          })),
          ...(node.default_route
            ? [
                {
                  target: exits.to(node.default_route),
                  actions: [route(node.id, node.default_route, `no route for ${node.input_key}: default`)],
                },
              ]
            : [
                {
                  target: exits.failing,
                  actions: assign(({ context }: Args) => ({
                    failure: {
                      code: "no_route",
                      message: `router '${node.id}': no route for ${node.input_key} = ${JSON.stringify(routedValue(context)) ?? "undefined"} and no default_route`,
                    },
                  })),
                },
              ]),
        ],
      },
    },
  };
}

/**
 * Strict route matching: a string value matches the route of the same text;
 * a number or boolean matches the route written as its JSON (`3`, `true`);
 * anything else matches nothing.
 */
export function routeMatches(value: unknown, route: string): boolean {
  if (typeof value === "string") return value === route;
  if (typeof value === "number" || typeof value === "boolean") return JSON.stringify(value) === route;
  return false;
}

/** A workflow `switch`: the first case whose condition holds, else `default`. */
export function switchNodeState(recipe: Recipe, node: SwitchNode, exits: Exits): StateConfig {
  const { entering } = frame(recipe, node, exits);
  const cases = node.next.filter((transition) => transition.when);
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: { always: { target: "routing" } },
      routing: {
        always: [
          ...cases.map((transition) => ({
            guard: ({ context }: Args) => conditionHolds(transition.when!, context.blackboard),
            target: exits.to(transition.target),
            actions: [route(node.id, transition.target, `case ${transition.label ?? "condition"} held`)],
          })),
          node.default
            ? {
                target: exits.to(node.default),
                actions: [route(node.id, node.default, "no case held: default")],
              }
            : {
                target: exits.failing,
                actions: failWith("no_route", () => `switch '${node.id}': no case held and it has no default`),
              },
        ],
      },
    },
  };
}

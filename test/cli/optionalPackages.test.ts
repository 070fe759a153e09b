import { describe, expect, it } from "vitest";
import { describeFailure, EXIT, failureLine } from "../../src/cli/failures.ts";
import { importOptional, MissingDependencyError } from "../../src/optionalPackages.ts";

/** What Node's loader throws for a package that is not installed. */
const notFound = (specifier: string, code = "ERR_MODULE_NOT_FOUND") =>
  Object.assign(new Error(`Cannot find package '${specifier}' imported from /app/dist/src/chat/app.js`), { code });

describe("an optional package", () => {
  it("loads as any module when installed", async () => {
    await expect(importOptional("the terminal UI", ["ink", "react"], async () => ({ loaded: true }))).resolves.toEqual({
      loaded: true,
    });
  });

  it("missing, is a one-line missing_dependency error naming what to install", async () => {
    const failure = await importOptional("the terminal UI", ["ink", "react"], () =>
      Promise.reject(notFound("react")),
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MissingDependencyError);
    expect(failure).toMatchObject({ code: "missing_dependency", packages: ["ink", "react"] });
    const described = describeFailure(failure);
    expect(described).toMatchObject({ code: "missing_dependency", exit: EXIT.unavailable });
    expect(failureLine("conclave chat", described, false)).toBe(
      "conclave chat: the terminal UI needs the optional packages ink and react: npm install ink react",
    );
    await expect(
      importOptional("the PostgreSQL memory graph", ["pg"], () => Promise.reject(notFound("pg", "MODULE_NOT_FOUND"))),
    ).rejects.toThrow("the PostgreSQL memory graph needs the optional package pg: npm install pg");
  });

  it("does not hide any other failure, a missing module that is not one of its own included", async () => {
    const other = notFound("pg-types");
    await expect(importOptional("the PostgreSQL blackboard store", ["pg"], () => Promise.reject(other))).rejects.toBe(
      other,
    );
    const broken = new SyntaxError("Unexpected token");
    await expect(importOptional("the terminal UI", ["ink"], () => Promise.reject(broken))).rejects.toBe(broken);
  });
});

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { answeringRole, Principals, SOLE_PRINCIPAL, sessionOf } from "../../src/gateway/principals.ts";

const dir = mkdtempSync(join(tmpdir(), "conclave-principals-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const aliceToken = file("alice.token", "alice-token-0123456789abcdef\n");
const crmToken = file("crm.token", "crm-token-0123456789abcdef");
const alicePassword = file("alice.nats", "alice-nats-password\n");

describe("gateway principals", () => {
  it("maps each token to its principal, a tenant with its NATS login or a named client with its namespace", () => {
    const principals = Principals.fromFile(
      file(
        "ok.yaml",
        `principals:
  - name: alice
    token_file: ${aliceToken}
    tenant: alice
    nats: { user: alice, password_file: ${alicePassword} }
    approver_roles: [editor]
  - name: crm
    token_file: ${crmToken}
`,
      ),
    );
    expect(principals.size).toBe(2);
    const alice = principals.resolve("Bearer alice-token-0123456789abcdef");
    expect(alice).toMatchObject({
      name: "alice",
      sessionPrefix: "",
      approverRoles: ["editor"],
      tenant: { name: "alice", nats: { user: "alice", password: "alice-nats-password" } },
    });
    const crm = principals.resolve("bearer  crm-token-0123456789abcdef ");
    expect(crm).toMatchObject({ name: "crm", sessionPrefix: "crm-", approverRoles: [] });
    expect(sessionOf(crm!, "chat1")).toBe("crm-chat1");
    expect(principals.resolve("Bearer nobody-0123456789abcdef")).toBeNull();
    expect(principals.resolve(undefined)).toBeNull();
    expect(principals.resolve("Basic alice-token-0123456789abcdef")).toBeNull();
  });

  it("without a file, the one token's holder is the sole principal, its sessions unprefixed", () => {
    const sole = Principals.sole("the-only-token-0123456789");
    expect(sole.resolve("Bearer the-only-token-0123456789")).toBe(SOLE_PRINCIPAL);
    expect(sessionOf(SOLE_PRINCIPAL, "chat1")).toBe("chat1");
    expect(Principals.sole(null).size).toBe(0);
  });

  it.each([
    [
      "a namespace that is a tenant's name",
      `principals:\n  - {name: a, token_file: ${aliceToken}, tenant: alice, nats: {user: alice}}\n  - {name: b, token_file: ${crmToken}, namespace: alice}\n`,
      /namespace alice is a tenant's name/,
    ],
    [
      "two principals with one token",
      `principals:\n  - {name: a, token_file: ${aliceToken}}\n  - {name: b, token_file: ${aliceToken}}\n`,
      /reuses a token/,
    ],
    [
      "two principals with one name",
      `principals:\n  - {name: a, token_file: ${aliceToken}}\n  - {name: a, token_file: ${crmToken}}\n`,
      /two principals named a/,
    ],
    [
      "a tenant without its NATS login",
      `principals:\n  - {name: a, token_file: ${aliceToken}, tenant: alice}\n`,
      /NATS login/,
    ],
    ["an unknown field", `principals:\n  - {name: a, token_file: ${aliceToken}, role: admin}\n`, /role/],
    ["a short token", `principals:\n  - {name: a, token_file: ${file("short.token", "short")}}\n`, /at least 16/],
    [
      "a missing token file",
      `principals:\n  - {name: a, token_file: ${join(dir, "none")}}\n`,
      /cannot read its token_file/,
    ],
  ])("refuses %s in one line", (_, text, message) => {
    const path = file("bad.yaml", text);
    expect(() => Principals.fromFile(path)).toThrow(message);
    try {
      Principals.fromFile(path);
    } catch (error) {
      expect((error as Error).message).not.toContain("\n");
      expect((error as { code?: string }).code).toBe("config");
    }
  });

  it("takes approver roles from the file, never from the request", () => {
    const editor = { name: "crm", sessionPrefix: "crm-", approverRoles: ["editor", "legal"] };
    expect(answeringRole(editor, undefined)).toBe("editor");
    expect(answeringRole(editor, "legal")).toBe("legal");
    expect(() => answeringRole(editor, "admin")).toThrow(/may answer only as editor, legal, not admin/);
    const none = { name: "ops", sessionPrefix: "ops-", approverRoles: [] };
    expect(answeringRole(none, undefined)).toBeUndefined();
    expect(() => answeringRole(none, "editor")).toThrow(/gives it none/);
    // Without a principals file the one operator names its role, as before.
    expect(answeringRole(SOLE_PRINCIPAL, "editor")).toBe("editor");
  });

  it("refuses a session id that does not fit after the namespace", () => {
    const crm = { name: "crm", sessionPrefix: "crm-", approverRoles: [] };
    expect(sessionOf(crm, "a".repeat(60))).toHaveLength(64);
    expect(() => sessionOf(crm, "a".repeat(61))).toThrow(/at most 60 characters/);
  });
});

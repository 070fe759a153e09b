/**
 * A stateless endpoint (`serveFunction`) on a real NATS server: one call of
 * its function per request and no actor made for it; bad input, a deadline
 * and a cancelled turn answered as `serveActor` answers them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InspectionEvent } from "xstate";
import { z } from "zod";
import { RemoteCallError } from "../../src/bus/errors.ts";
import { requestJson } from "../../src/bus/request.ts";
import { serveFunction } from "../../src/bus/serveActor.ts";
import { type Service, startService } from "../../src/bus/service.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
const Ask = z.object({ session_id: z.string(), turn_id: z.number(), wait: z.boolean().default(false) });
const Reply = z.object({ echo: z.string() });

const inspected: InspectionEvent[] = [];
const cancellers = new Map<string, (reason: string) => void>();
let aborted: unknown;
let service: Service;

beforeAll(async () => {
  service = startService(await nats.connect("worker"), "worker", { name: "function-test", version: "0.0.1" });
  serveFunction(
    service,
    {
      name: "echo",
      subject: subjects.councilSafety,
      request: Ask,
      timeoutMs: (request) => (request.session_id === "slow" ? 50 : 5_000),
      handle: (request, signal) =>
        request.wait
          ? new Promise((_, reject) =>
              signal.addEventListener("abort", () => {
                aborted = signal.reason;
                reject(signal.reason);
              }),
            )
          : Promise.resolve({ echo: `${request.session_id}/${request.turn_id}` }),
    },
    {
      inspect: (event) => inspected.push(event),
      cancellations: {
        watch: (sessionId, turnId, stop) => {
          cancellers.set(`${sessionId}.${turnId}`, stop);
          return () => cancellers.delete(`${sessionId}.${turnId}`);
        },
      },
    },
  );
});

afterAll(async () => {
  await service?.stop();
});

const codeOf = (error: unknown) => (error instanceof RemoteCallError ? error.code : error);

describe("a function endpoint", () => {
  it("answers with its function's reply, and makes no actor for it", async () => {
    const nc = await nats.connect("runner");
    await expect(
      requestJson(nc, subjects.councilSafety, { session_id: "s", turn_id: 1 }, Reply, { timeoutMs: 5_000 }),
    ).resolves.toEqual({ echo: "s/1" });
    expect(inspected).toEqual([]);
    expect(cancellers.size).toBe(0); // its turn's watch ended with the call
  });

  it("answers bad input with invalid_request and keeps serving", async () => {
    const nc = await nats.connect("runner");
    const bad = await requestJson(nc, subjects.councilSafety, { session_id: 7 }, Reply, { timeoutMs: 5_000 }).catch(
      codeOf,
    );
    expect(bad).toBe("invalid_request");
    await expect(
      requestJson(nc, subjects.councilSafety, { session_id: "s", turn_id: 2 }, Reply, { timeoutMs: 5_000 }),
    ).resolves.toEqual({ echo: "s/2" });
  });

  it("answers timeout past its deadline, its work's signal aborted", async () => {
    const nc = await nats.connect("runner");
    const late = requestJson(nc, subjects.councilSafety, { session_id: "slow", turn_id: 1, wait: true }, Reply, {
      timeoutMs: 5_000,
    });
    expect(await late.catch(codeOf)).toBe("timeout");
    expect(aborted).toBeDefined();
  });

  it("answers cancelled when its turn is cancelled while it runs", async () => {
    const nc = await nats.connect("runner");
    const call = requestJson(nc, subjects.councilSafety, { session_id: "c", turn_id: 3, wait: true }, Reply, {
      timeoutMs: 5_000,
    });
    await expect.poll(() => cancellers.has("c.3")).toBe(true);
    cancellers.get("c.3")?.("the user stopped it");
    const error = await call.catch((caught: unknown) => caught);
    expect(codeOf(error)).toBe("cancelled");
    expect((error as Error).message).toMatch(/the user stopped it/);
  });
});

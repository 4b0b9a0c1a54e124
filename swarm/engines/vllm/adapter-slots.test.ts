import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError } from "../port/engine-error.ts";
import { UpstreamHttp } from "../openai-compatible/upstream-http.ts";
import { AdapterSlots } from "./adapter-slots.ts";

/**
 * vLLM's runtime LoRA endpoints on 127.0.0.1 (vLLM itself needs a GPU): load refuses a
 * name in use, unload answers 404 for a name not loaded; `failUnloads` makes the next
 * unloads answer 500 (as a server busy or erroring would), `refuseLoads` the next loads 400.
 */
let server: Server;
let origin = "";
const loaded = new Set<string>();
const script = { failUnloads: 0, refuseLoads: 0 };
const http = new UpstreamHttp({});

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const { lora_name: name } = JSON.parse(body) as { lora_name: string };
      const answer = (status: number, text: string) => response.writeHead(status, { "content-type": "text/plain" }).end(text);
      if (request.url === "/v1/load_lora_adapter") {
        if (script.refuseLoads > 0 && script.refuseLoads--) return answer(400, "adapter files unreadable");
        if (loaded.has(name)) return answer(400, `name ${name} in use`);
        loaded.add(name);
        return answer(200, "ok");
      }
      if (script.failUnloads > 0 && script.failUnloads--) return answer(500, "busy");
      return loaded.delete(name) ? answer(200, "ok") : answer(404, "not loaded");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  http.close();
  server.close();
});

function slots(): AdapterSlots {
  loaded.clear();
  return new AdapterSlots(async (path, body) => {
    const answer = await http.request("POST", new URL(`${origin}${path}`), body);
    return { status: answer.status, text: await answer.text() };
  });
}

describe("adapter slots (the vllm engine's weight sync)", () => {
  it("loads each adapter under a fresh name, switches to it, then unloads the one it replaced", async () => {
    const adapters = slots();
    const switched: string[] = [];
    for (const step of [1, 2, 3])
      await adapters.load(`a3r-step-${step}`, `/adapters/step-${step}`, (name) => switched.push(`${name}:${[...loaded].join(",")}`));
    // At each switch the new adapter is loaded beside the old (vLLM's --max-loras 2).
    expect(switched).toEqual(["a3r-step-1-1:a3r-step-1-1", "a3r-step-2-2:a3r-step-1-1,a3r-step-2-2", "a3r-step-3-3:a3r-step-2-2,a3r-step-3-3"]);
    expect([...loaded]).toEqual(["a3r-step-3-3"]);
    expect(adapters.current).toEqual({ name: "a3r-step-3-3", path: "/adapters/step-3" });
    expect(adapters.staleNames).toEqual([]);
  });

  it("keeps a name whose unload failed and unloads it at the next sync, so names never pile up", async () => {
    const adapters = slots();
    await adapters.load("a", "/a", () => undefined);
    script.failUnloads = 1;
    await adapters.load("b", "/b", () => undefined);
    expect(adapters.staleNames).toEqual(["a-1"]);
    expect(adapters.lastUnloadFailure).toMatch(/unloading adapter a-1 answered 500: busy/);
    expect([...loaded]).toEqual(["a-1", "b-2"]);
    await adapters.load("c", "/c", () => undefined);
    expect(adapters.staleNames).toEqual([]);
    expect([...loaded]).toEqual(["c-3"]);
  });

  it("counts an unload answered 404 (not loaded) as done", async () => {
    const adapters = slots();
    await adapters.load("a", "/a", () => undefined);
    loaded.delete("a-1");
    await adapters.load("b", "/b", () => undefined);
    expect(adapters.staleNames).toEqual([]);
  });

  it("leaves the previous adapter serving when the server refuses the new one", async () => {
    const adapters = slots();
    await adapters.load("a", "/a", () => undefined);
    script.refuseLoads = 1;
    const switched: string[] = [];
    const failure = await adapters.load("b", "/b", (name) => switched.push(name)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineError);
    expect((failure as EngineError).message).toMatch(/loading adapter \/b answered 400: adapter files unreadable/);
    expect(switched).toEqual([]);
    expect(adapters.current?.name).toBe("a-1");
    expect([...loaded]).toEqual(["a-1"]);
  });

  it("owes nothing after a server restart (a fresh process holds no adapter)", async () => {
    const adapters = slots();
    await adapters.load("a", "/a", () => undefined);
    script.failUnloads = 1;
    await adapters.load("b", "/b", () => undefined);
    adapters.forgetAll();
    expect(adapters.staleNames).toEqual([]);
    expect(adapters.current).toBeUndefined();
  });
});

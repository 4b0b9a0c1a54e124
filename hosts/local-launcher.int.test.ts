import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureA3rCommand } from "../test-support/fixture-blueprint.ts";
import { describeLauncherConformance } from "./launcher-conformance.ts";
import { LocalLauncher } from "./local-launcher.ts";

describeLauncherConformance("local", async () => {
  const workdir = await mkdtemp(join(tmpdir(), "a3r-local-host-"));
  const make = () => new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
  return {
    launcher: make(),
    reopen: async () => make(),
    cleanup: () => rm(workdir, { recursive: true, force: true }),
  };
});

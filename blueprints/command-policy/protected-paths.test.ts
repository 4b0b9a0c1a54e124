import { describe, expect, it } from "vitest";
import {
  credentialsStart,
  dataFolderMark,
  globMatches,
  isDataFolder,
  isProtectedPath,
  markWord,
  protectedMark,
  startupFileMark,
  startupFileStart,
} from "./protected-paths.ts";

describe("protected paths", () => {
  it.each([
    "/",
    "/*",
    "/.",
    "/.*",
    "~",
    "~/",
    "~/*",
    "$HOME",
    "$HOME/*",
    "/etc",
    "/etc/",
    "/usr/lib/x",
    "/bin/sh",
    "/home",
    "/home/*",
    "/home/alice",
    "/opt",
    "/var/*",
    "/tmp",
    "/*/",
    "/???",
    "/e*",
    "/[a-f]tc",
    "/[!a]*",
  ])("protects %s", (path) => {
    expect(isProtectedPath(path)).toBe(true);
  });

  it.each([
    "/tmp/a3r-runs/x",
    "/opt/a3r",
    "/var/tmp/x",
    "/home/alice/proj",
    "/dev/shm/x",
    "/data",
    "/data*",
    "/x?",
    "./etc",
    "etc",
    "~/.cache",
    "$HOME/.cache/pip",
    "/zz*",
  ])("leaves %s alone", (path) => {
    expect(isProtectedPath(path)).toBe(false);
  });

  it.each(["~/..", "~/../", "$HOME/..", "~/x/..", "~/../bob", "~/x/../../*", "~alice", "~root/", "~/.[!.]*", "~/.??*"])(
    "protects %s: the home, its dot files, or above it",
    (path) => {
      expect(isProtectedPath(path)).toBe(true);
    },
  );

  it.each([
    "/data",
    "/data/",
    "/data/*",
    "/scratch",
    "/da*",
    "/var/lib",
    "/var/lib/docker",
    "/var/log/*",
    "/mnt/nfs",
    "/media/usb",
    "~/.config",
    "$HOME/.local/*",
    "/root/.config",
    "/home/alice/.local",
  ])("counts %s as a whole data folder", (path) => {
    expect(isDataFolder(path)).toBe(true);
  });

  it.each(["/data/runs/x", "/data/runs/x/*", "/var/lib/apt/lists/*", "/var/tmp/x", "/mnt/nfs/runs", "~/.config/wandb", "~/.cache", "./data", "data"])(
    "leaves %s to the run",
    (path) => {
      expect(isDataFolder(path)).toBe(false);
    },
  );

  it("marks a whole data folder only as a whole word, so a container may still mount it", () => {
    expect(markWord("/data")).toBe(`${dataFolderMark}/data`);
    expect(markWord("/data:/data")).toBe("/data:/data");
    expect(markWord("--out=/data")).toBe("--out=/data");
  });

  it("finds a home's shell startup file at a word's start or after =", () => {
    expect(startupFileStart("~/.bashrc")).toBe(0);
    expect(startupFileStart("/home/alice/.zshrc")).toBe(0);
    expect(startupFileStart("of=$HOME/.profile")).toBe(3);
    expect(startupFileStart("~/.bashrc.bak")).toBe(-1);
    expect(startupFileStart("./.bashrc")).toBe(-1);
    expect(markWord("/root/.bash_profile")).toBe(`${startupFileMark}/root/.bash_profile`);
  });

  it("matches globs as a shell does, without backtracking", () => {
    expect(globMatches("e*", "etc")).toBe(true);
    expect(globMatches("???", "etc")).toBe(true);
    expect(globMatches("??", "etc")).toBe(false);
    expect(globMatches("*s*r*", "usr")).toBe(true);
    expect(globMatches("[!u]sr", "usr")).toBe(false);
    expect(globMatches(`${"*a".repeat(5000)}`, "bin")).toBe(false);
  });

  it("finds credentials at a word's start or after = @ : ,", () => {
    expect(credentialsStart("~/.ssh/id_rsa")).toBe(0);
    expect(credentialsStart("file=@$HOME/.aws/credentials")).toBe(6);
    expect(credentialsStart("/root/.config/gcloud")).toBe(0);
    expect(credentialsStart("~/.sshx")).toBe(-1);
    expect(credentialsStart("x~/.ssh")).toBe(-1);
  });

  it("marks a volume's source, an option's value and a mount's source, but not shared scratch", () => {
    expect(markWord("/:/host")).toBe(`${protectedMark}/:/host`);
    expect(markWord("--volume=/etc:/etc")).toBe(`--volume=${protectedMark}/etc:/etc`);
    expect(markWord("type=bind,source=/,target=/h")).toBe(`type=bind,source=${protectedMark}/,target=/h`);
    expect(markWord("/tmp:/tmp")).toBe("/tmp:/tmp");
    expect(markWord("/data:/data")).toBe("/data:/data");
  });
});

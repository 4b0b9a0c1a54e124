import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { EngineError } from "../port/engine-error.ts";

/**
 * The embedded engine's checkpoint: a folder `checkpoint-<step>` with meta.json and one raw
 * little-endian float32 file per array. Written into a temporary sibling folder and renamed
 * into place, so a reader never sees half a checkpoint.
 */
export interface EmbeddedCheckpoint {
  step: number;
  adamStep: number;
  randomState: number;
  vocabulary: string[];
  featureBits: number;
  weights: Float32Array;
  adamFirst: Float32Array;
  adamSecond: Float32Array;
  reference: Float32Array;
}

const metaSchema = z.strictObject({
  format: z.literal("a3r-embedded/v1"),
  step: z.number().int().min(0),
  adamStep: z.number().int().min(0),
  randomState: z.number().int().min(0),
  vocabulary: z.array(z.string()),
  featureBits: z.number().int(),
});

const arrayNames = ["weights", "adamFirst", "adamSecond", "reference"] as const;

export async function writeCheckpoint(directory: string, checkpoint: EmbeddedCheckpoint): Promise<string> {
  const target = join(directory, `checkpoint-${checkpoint.step}`);
  const temporary = `${target}.tmp-${process.pid}-${Date.now()}`;
  await mkdir(temporary, { recursive: true });
  const meta = {
    format: "a3r-embedded/v1",
    step: checkpoint.step,
    adamStep: checkpoint.adamStep,
    randomState: checkpoint.randomState,
    vocabulary: checkpoint.vocabulary,
    featureBits: checkpoint.featureBits,
  };
  await writeFile(join(temporary, "meta.json"), `${JSON.stringify(meta, null, 2)}\n`);
  for (const name of arrayNames) {
    const array = checkpoint[name];
    await writeFile(join(temporary, `${name}.f32`), new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  }
  await rm(target, { recursive: true, force: true });
  await rename(temporary, target);
  return target;
}

export async function readCheckpoint(path: string): Promise<EmbeddedCheckpoint> {
  let metaText: string;
  try {
    metaText = await readFile(join(path, "meta.json"), "utf8");
  } catch (error) {
    throw new EngineError(
      "ENGINE_CHECKPOINT_INVALID",
      `no embedded checkpoint at ${path} (meta.json unreadable)`,
      "pass the folder returned by save(), e.g. <experiment_dir>/checkpoints/checkpoint-<step>",
      { cause: error },
    );
  }
  const parsed = metaSchema.safeParse(JSON.parse(metaText));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new EngineError(
      "ENGINE_CHECKPOINT_INVALID",
      `${join(path, "meta.json")}: field "${issue?.path.join(".") ?? ""}" ${issue?.message ?? "is invalid"}`,
      "the checkpoint was not written by this engine version; start fresh or use a matching checkpoint",
    );
  }
  const size = (1 << parsed.data.featureBits) * (parsed.data.vocabulary.length + 1);
  const arrays = {} as Record<(typeof arrayNames)[number], Float32Array>;
  for (const name of arrayNames) {
    const bytes = await readFile(join(path, `${name}.f32`));
    if (bytes.byteLength !== size * 4) {
      throw new EngineError(
        "ENGINE_CHECKPOINT_INVALID",
        `${join(path, `${name}.f32`)} has ${bytes.byteLength} bytes, expected ${size * 4}`,
        "the checkpoint is truncated or from another model size",
      );
    }
    const copy = new Float32Array(size);
    new Uint8Array(copy.buffer).set(bytes);
    arrays[name] = copy;
  }
  return { ...parsed.data, ...arrays };
}

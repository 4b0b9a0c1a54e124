import { join } from "node:path";
import { z } from "zod";
import { appendJsonLine, readJsonLines } from "../../campaign/index.ts";

/**
 * runs/<campaign>/run-identities.jsonl: one line per blueprint the leader dispatched or
 * reused, with its identity (run-identity.ts) as computed when it was sent, so the
 * results index knows what each finished run was without re-reading code that may have
 * changed since. Appended by the leader only; a torn last line is skipped.
 */
export const identityRecordsFile = "run-identities.jsonl";

const identityRecordSchema = z.object({
  blueprintId: z.string().min(1),
  key: z.string().regex(/^[0-9a-f]{64}$/),
  parts: z.object({
    mode: z.string(),
    codeRevision: z.string(),
    configSha256: z.string().nullable(),
    command: z.string(),
    interpreter: z.string(),
    seed: z.unknown(),
    overrides: z.record(z.string(), z.unknown()),
  }),
  /** The result directory a reused run was copied from. */
  reusedFrom: z.string().optional(),
});

export type IdentityRecord = z.infer<typeof identityRecordSchema>;

export async function readIdentityRecords(campaignRoot: string): Promise<IdentityRecord[]> {
  const { lines } = await readJsonLines(join(campaignRoot, identityRecordsFile));
  const records: IdentityRecord[] = [];
  const seen = new Set<string>();
  for (const line of lines) {
    const parsed = identityRecordSchema.safeParse(line.value);
    if (!parsed.success || seen.has(parsed.data.blueprintId)) continue;
    seen.add(parsed.data.blueprintId);
    records.push(parsed.data);
  }
  return records;
}

export async function appendIdentityRecord(campaignRoot: string, record: IdentityRecord): Promise<void> {
  await appendJsonLine(join(campaignRoot, identityRecordsFile), record);
}

import { A3rError } from "../core/errors.ts";
import { isSafeBlueprintId } from "../blueprints/front-matter-schema.ts";
import { toSafeId } from "../blueprints/parse-blueprint.ts";

/**
 * Campaign ids and blueprint ids become folder names (`runs/<campaign>/`,
 * `results/<blueprint id>/`), so they are checked here before any path is built: no
 * slashes, no `..`, nothing a shell or another filesystem would mangle.
 */
export const campaignIdPattern = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Turns free text ("GRPO batching, v2!") into a valid campaign id ("grpo-batching-v2"). */
export function slugifyCampaignId(text: string): string {
  const slug = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return slug === "" ? "campaign" : slug;
}

export function isCampaignId(id: string): boolean {
  return campaignIdPattern.test(id);
}

export function assertCampaignId(id: string): void {
  if (isCampaignId(id)) return;
  throw new A3rError("CAMPAIGN_ID_INVALID", `campaign id ${JSON.stringify(id)} is not a safe folder name`, {
    where: "campaign id",
    hint: `use lowercase letters, digits and dashes, 1 to 63 characters, starting with a letter or digit, e.g. "${slugifyCampaignId(id)}"`,
  });
}

export function assertSafeBlueprintId(id: string): void {
  if (isSafeBlueprintId(id)) return;
  // The blueprint contract owns what a valid id is; this only guards folder names built from one.
  const suggestion = toSafeId(id) || "blueprint-1";
  throw new A3rError("BLUEPRINT_ID_UNSAFE", `blueprint id ${JSON.stringify(id)} cannot be a folder name`, {
    where: "blueprint id",
    hint: `use lower-case letters, digits, dots, dashes and underscores, starting with a letter or digit, e.g. "${suggestion}"`,
  });
}

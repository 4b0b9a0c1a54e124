import { createHmac, randomBytes } from "node:crypto";
import type { Episode } from "./episode-registry.ts";

/**
 * How episode and client uuids appear in what any caller can read. Only a caller with the
 * admin token sees them; everyone else sees stable pseudonyms (a keyed hash, useless for
 * ending someone's episode) with the task ids, counts and ages AgentJet's throttle reads.
 */
export interface IdNames {
  episode(uuid: string): string;
  client(uuid: string): string;
}
export const showIds: IdNames = { episode: (uuid) => uuid, client: (uuid) => uuid };
const pseudonymKey = randomBytes(32);
const pseudonym = (kind: string, uuid: string): string => `${kind}-${createHmac("sha256", pseudonymKey).update(uuid).digest("hex").slice(0, 12)}`;
export const pseudonyms: IdNames = { episode: (uuid) => pseudonym("episode", uuid), client: (uuid) => pseudonym("client", uuid) };

/** AgentJet calls a claimed, unfinished episode "claimed"; a3r's own `status` field keeps "running". */
export function agentJetStatus(episode: Episode): string {
  return episode.status === "running" ? "claimed" : episode.status;
}

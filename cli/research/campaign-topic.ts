import { measuredTopic, parseTopic, type Topic } from "../../leader/index.ts";
import { swarmConfigSchema } from "../../swarm/schema.ts";

/** The engine config schemas the leader checks blueprints against and reads knob bounds and measurement marks from. */
export const engineSchemas = { swarm: swarmConfigSchema };

/**
 * A campaign's topic as its leader compares runs (on a fixed protocol when a knob changes
 * how the metric is sampled), so status, report and write-up name the metric the verdicts used.
 */
export async function campaignTopic(campaign: { topic: string; paths: { topic: string } }): Promise<Topic> {
  return measuredTopic(parseTopic(campaign.topic, { file: campaign.paths.topic }), engineSchemas);
}

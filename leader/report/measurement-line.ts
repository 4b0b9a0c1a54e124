import { formatNumber } from "../domain/configurations.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * The report's statement of what was compared and why (leader/design/measurement-protocol.ts):
 * the fixed-protocol metric when a knob changes how the topic's metric is sampled, the
 * bias when no protocol could be planned, else that one training metric scores everyone. Pure.
 */
export function measurementLine(topic: Topic): string {
  const protocol = topic.measurement;
  if (protocol) {
    const knobs = protocol.knobs.map((item) => `${item.knob} (${item.field}: ${item.why})`).join("; ");
    const { temperature, top_p, max_tokens } = protocol.sampling;
    return `Measurement: ${knobs}; so configurations are compared on ${protocol.metric}, not ${protocol.trainingMetric}: ${protocol.episodes} fixed-protocol eval episodes after steps ${protocol.atSteps.join(", ")}, one task each from a set fixed by the run's seed, all at the base's sampling (temperature ${formatNumber(temperature)}, top_p ${formatNumber(top_p)}, max_tokens ${max_tokens}) and never trained on; ${protocol.trainingMetric} is still recorded for each run.`;
  }
  const name = topic.metric?.name ?? "none";
  if (topic.measurementCaveat)
    return `Measurement: ${topic.measurementCaveat}; so each configuration's ${name} is measured at its own setting, and a greedier sampler can score higher by itself, without learning more.`;
  return `Measurement: every configuration is scored by the same training metric (${name}); no knob changes how it is sampled.`;
}

import type { MultiRoleTask } from "../../../swarm/client/index.ts";
import { roles, runEpisode, sampleTask, type ProposalReviewTask, type Role } from "./proposal-review.ts";

/**
 * The proposal–review task as `a3r swarm client` runs it: two roles, one swarm server each.
 *
 *   a3r swarm client proposal-review --url proposer=http://127.0.0.1:10091 --url reviewer=http://127.0.0.1:10092
 */
const task: MultiRoleTask<Role, ProposalReviewTask> = {
  name: "proposal-review",
  roles,
  sampleTask,
  runEpisode: async (openai, sampled) => (await runEpisode(openai, sampled)).outcomes,
};

export default task;

import type {
  BlueprintText,
  BlueprintWritingInput,
  Conclusion,
  ConclusionInput,
  FramedQuestion,
  Planner,
  PlannerInput,
  PlannerStep,
} from "../../domain/planner.ts";
import type { Topic } from "../../domain/topic.ts";

/**
 * A planner opened at its first call: resuming a finished campaign, or one waiting for
 * review, needs no model keys, since nothing is asked of the model then.
 */
export class PlannerOpenedWhenAsked implements Planner {
  private opened: Promise<Planner> | undefined;

  constructor(
    readonly name: string,
    private readonly open: () => Promise<Planner>,
  ) {}

  private planner(): Promise<Planner> {
    this.opened ??= this.open();
    return this.opened;
  }

  async frame(topic: Topic): Promise<FramedQuestion> {
    return (await this.planner()).frame!(topic);
  }

  async next(input: PlannerInput): Promise<PlannerStep> {
    return (await this.planner()).next(input);
  }

  async writeBlueprints(input: BlueprintWritingInput): Promise<BlueprintText[]> {
    return (await this.planner()).writeBlueprints!(input);
  }

  async conclude(input: ConclusionInput): Promise<Conclusion> {
    return (await this.planner()).conclude!(input);
  }
}

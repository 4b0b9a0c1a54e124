/**
 * The words the embedded policy can say by default: those the example tasks need
 * (examples/tasks) plus distractors, so that chance level on the tasks is low (about 1/33).
 */
export const defaultVocabulary: readonly string[] = [
  "red", "green", "blue", "yellow", "white", "black",
  "north", "east", "south", "west",
  "yes", "no", "maybe", "the", "a", "is", "it", "i", "think", "not",
  "one", "two", "three", "four", "five", "up", "down", "left", "right", "ok", "done", "answer",
];

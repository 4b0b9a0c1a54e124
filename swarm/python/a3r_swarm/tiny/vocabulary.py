"""The default words a tiny model can say: the same list as the TypeScript embedded
engine (swarm/engines/embedded/default-vocabulary.ts), so chance on the example tasks is
the same (about 1/33: 32 words plus end-of-turn)."""

DEFAULT_VOCABULARY: tuple[str, ...] = (
    "red", "green", "blue", "yellow", "white", "black",
    "north", "east", "south", "west",
    "yes", "no", "maybe", "the", "a", "is", "it", "i", "think", "not",
    "one", "two", "three", "four", "five", "up", "down", "left", "right", "ok", "done", "answer",
)

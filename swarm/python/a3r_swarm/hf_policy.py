"""The Policy wrapper for transformers models (AutoModelForCausalLM + PEFT LoRA).

bf16 on CUDA, fp32 on CPU; LoRA weights are kept in fp32 so AdamW updates are not lost to
bf16 rounding. Adapters are saved with PEFT's save_pretrained, which vLLM loads as is.
transformers and peft are imported only when this module is used.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

import torch

from .errors import AdapterInvalid, BadRequest, ModelNotFound, import_transformers
from .models import Policy, right_padded

# Linear layers of Llama/Qwen/Mistral-style blocks; other architectures fall back to PEFT's
# "all-linear" (which never includes lm_head, something vLLM could not load).
COMMON_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# Config fields of architectures whose forward changes the logits after lm_head (Gemma's
# soft-capping, Cohere's and Granite's scaling).
LOGIT_POST_PROCESSING = ("final_logit_softcapping", "logit_scale", "logits_scaling")


class TransformersPolicy(Policy):
    kind = "transformers"

    def __init__(self, model_path: str, device: torch.device):
        transformers, self._peft = import_transformers()
        self.model_path = model_path
        self.device = device
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_path)
            model = transformers.AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype)
        except (OSError, ValueError) as error:
            raise ModelNotFound(f"model not found: {model_path} ({error})") from error
        if getattr(self.tokenizer, "chat_template", None) is None:
            raise BadRequest(f"model: {model_path} has a tokenizer without a chat_template")
        self.model = model.to(device).eval()
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.max_context = int(getattr(model.config, "max_position_embeddings", 4096))
        self.emittable_mask = None
        stops = set()
        for source in (self.tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
            if isinstance(source, int):
                stops.add(source)
            elif isinstance(source, (list, tuple)):
                stops.update(int(x) for x in source)
        self.stop_token_ids = frozenset(stops)
        self._adapters: set[str] = set()

    def encode_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        rendered = self.tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=True)
        if hasattr(rendered, "keys"):  # some versions answer a BatchEncoding
            rendered = rendered["input_ids"]
        return [int(x) for x in rendered]

    def decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)

    def forward_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    def selected_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        predict: torch.Tensor) -> torch.Tensor:
        positions = torch.cat([predict, torch.zeros_like(predict[:, :1])], dim=1)
        return self.logits_at(input_ids, attention_mask, positions)

    def logits_at(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Logits [N, vocab] at the positions where `positions` [B, T] is true, row-major.
        The decoder's hidden states, then lm_head on those positions only: for a 151k
        vocabulary the logits of every other position would be most of the memory and
        time. Models that post-process logits (soft-capping, scaling) take the general
        path so their numbers stay the model's own."""
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        config = base.config
        if any(getattr(config, name, None) not in (None, 1, 1.0) for name in LOGIT_POST_PROCESSING):
            return self.forward_logits(input_ids, attention_mask)[positions]
        hidden = base.get_decoder()(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
        return base.get_output_embeddings()(hidden[positions])

    def enable_gradient_checkpointing(self) -> None:
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        try:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        except TypeError:  # transformers < 4.35: reentrant checkpointing needs grad-requiring inputs
            base.gradient_checkpointing_enable()
            base.enable_input_require_grads()
        base.config.use_cache = False

    def add_lora(self, rank: int, alpha: float, dropout: float, target_modules: list[str] | None, seed: int) -> None:
        if not target_modules:
            names = {name.rsplit(".", 1)[-1] for name, _ in self.model.named_modules()}
            present = [name for name in COMMON_TARGETS if name in names]
            target_modules = present or "all-linear"
        config = self._peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout,
                                       target_modules=target_modules, task_type="CAUSAL_LM")
        with torch.random.fork_rng(devices=[self.device.index or 0] if self.device.type == "cuda" else []):
            torch.manual_seed(seed)
            try:
                self.model = self._peft.get_peft_model(self.model, config)
            except ValueError as error:
                raise BadRequest(f"lora.target_modules: {error}") from error
        for _, parameter in self.trainable_named_parameters():
            parameter.data = parameter.data.float()

    def reference(self):
        return self.model.disable_adapter()

    def set_dropout_active(self, active: bool) -> None:
        # Training mode is what makes transformers honour gradient checkpointing, so the
        # training forward runs in train mode with every dropout except LoRA's switched off
        # (the behaviour log-probs came from an eval-mode model).
        self.model.train(active)
        for name, module in self.model.named_modules():
            if isinstance(module, torch.nn.Dropout):
                module.train(active and ".lora_dropout." in f".{name}.")

    def save_adapter(self, directory: str | Path) -> None:
        # Only LoRA weights are trained; PEFT's "auto" would also write the frozen
        # embedding matrices whenever lm_head or embed_tokens is a target (tens of MB per
        # step on a tied-embedding model), which vLLM does not need.
        self.model.save_pretrained(str(directory), save_embedding_layers=False)

    def load_adapter(self, name: str, path: str) -> None:
        # Checked first: PEFT injects LoRA layers into the base model before it reads the
        # weights, so a failure inside it could leave half an adapter behind.
        if not (Path(path) / "adapter_config.json").is_file():
            raise AdapterInvalid(f"invalid adapter at {path}: no adapter_config.json")
        try:
            if not self._adapters:
                self.model = self._peft.PeftModel.from_pretrained(self.model, path, adapter_name=name)
            else:
                self.model.load_adapter(path, adapter_name=name)
        except Exception as error:  # PEFT raises many types for a bad dir; all mean "invalid"
            raise AdapterInvalid(f"invalid adapter at {path}: {error}") from error
        self.model.eval()
        self._adapters.add(name)

    def unload_adapter(self, name: str) -> None:
        self._adapters.discard(name)
        if self._adapters:
            if name in self.model.peft_config:
                self.model.set_adapter(next(iter(self._adapters)))
                self.model.delete_adapter(name)
        else:
            # Back to the plain base model: PEFT cannot hold zero adapters.
            self.model = self.model.unload()

    @contextmanager
    def use_adapter(self, name: str | None) -> Iterator[None]:
        if name is None:
            context = self.model.disable_adapter() if self._adapters else nullcontext()
            with context:
                yield
        else:
            self.model.set_adapter(name)
            yield

    def batch_next_token_logits(self, sequences: list[list[int]]) -> torch.Tensor:
        # No KV cache: each step recomputes the padded batch. For the short prompts of RL
        # tasks with a large vocabulary, lm_head on the last positions costs more than
        # the layers, and a cache across requests that join and leave would cost more code.
        ids, attention, last = right_padded(sequences, self.device)
        positions = torch.zeros_like(attention, dtype=torch.bool)
        positions[torch.arange(len(sequences), device=self.device), last] = True
        with torch.no_grad():
            return self.logits_at(ids, attention, positions).float()

    def next_token_logits(self, token_ids: list[int], cache: Any) -> tuple[torch.Tensor, Any]:
        with torch.no_grad():
            if cache is None:
                ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
            else:
                ids = torch.tensor([token_ids[-1:]], dtype=torch.long, device=self.device)
            out = self.model(input_ids=ids, past_key_values=cache, use_cache=True)
            return out.logits[0, -1].float(), out.past_key_values

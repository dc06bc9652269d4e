"""peft on a plain torch model (no downloads): LoRA (with dropout off, rank-stabilised scaling, DoRA), LoHa,
LoKr, IA3 and prefix-free adapters injected into named Linear layers; outputs with adapters on, off
(disable_adapter) and merged into the weights; several named adapters switched; gradients reaching only the
adapter weights; trainable-parameter counts; adapter state dicts saved and reloaded."""
import os
import tempfile
import warnings

import torch
from peft import (IA3Config, LoHaConfig, LoKrConfig, LoraConfig, PeftModel, get_peft_model,
                  get_peft_model_state_dict)
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin0, self.act, self.lin1, self.out = nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.out(self.act(self.lin1(self.act(self.lin0(x)))))


def fill_adapters(model, seed):
    """Adapters start as no-ops (zero B, ones) and from torch's generator: give the trainable ones values."""
    fill(nn.ParameterList([p for p in model.parameters() if p.requires_grad]), seed=seed, scale=0.2)


x, target = data(5, 6), data(5, 3, seed=2)
CONFIGS = {
    "lora": lambda: LoraConfig(r=2, lora_alpha=4, target_modules=["lin0", "lin1"], lora_dropout=0.0),
    "lora_rslora": lambda: LoraConfig(r=4, lora_alpha=2, target_modules=["lin1", "out"], use_rslora=True,
                                      init_lora_weights="gaussian"),
    "dora": lambda: LoraConfig(r=2, target_modules=["lin0", "lin1"], use_dora=True),
    "loha": lambda: LoHaConfig(r=2, alpha=4, target_modules=["lin0", "lin1"]),
    "lokr": lambda: LoKrConfig(r=2, alpha=4, target_modules=["lin1"]),
    "ia3": lambda: IA3Config(target_modules=["lin0", "lin1"], feedforward_modules=["lin1"]),
}
results = {}
for name, make in CONFIGS.items():
    torch.manual_seed(0)
    base = fill(MLP())
    plain = base(x)
    model = get_peft_model(base, make())
    fill_adapters(model, seed=3)
    seen = []
    model.base_model.model.lin1.register_forward_hook(lambda m, i, o: seen.append(o.detach().clone()))
    out = model(x)
    loss = ((out - target) ** 2).mean()
    loss.backward()
    trainable, total = model.get_nb_trainable_parameters()
    grads = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    with model.disable_adapter():
        disabled = model(x)
    state = get_peft_model_state_dict(model)
    record = {"out": out, "plain": plain, "disabled_is_plain": bool(torch.equal(disabled, plain)),
              "loss": loss, "grads": grads, "trainable": [trainable, total], "hooked": seen,
              "state": {k: v for k, v in sorted(state.items())}}
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        record["files"] = sorted(os.listdir(folder))
        reloaded = PeftModel.from_pretrained(fill(MLP()), folder)
        record["reloaded"] = reloaded(x)
        record["reloaded_is_out"] = bool(torch.allclose(record["reloaded"], out))
    merged = model.merge_and_unload()
    record["merged"] = merged(x)
    record["merged_type"] = type(merged.lin1).__name__
    results[name] = record

# two named LoRA adapters on one model, switched and combined
torch.manual_seed(0)
model = get_peft_model(fill(MLP()), LoraConfig(r=2, target_modules=["lin0"]), adapter_name="first")
model.add_adapter("second", LoraConfig(r=3, target_modules=["lin0", "out"]))
fill_adapters(model, seed=4)
outs = {}
for adapter in ("first", "second"):
    model.set_adapter(adapter)
    outs[adapter] = model(x)
model.base_model.add_weighted_adapter(["first", "second"], [0.5, 0.5], "mix", combination_type="cat")
model.set_adapter("mix")
outs["mix"] = model(x)
results["adapters"] = {"outs": outs, "active": model.active_adapter}
emit(results)

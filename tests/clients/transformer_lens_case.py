"""TransformerLens (4.x) on a small TL-native transformer built from a TransformerBridgeConfig (no
download): run_with_cache over every hook point, run_with_hooks reading and ablating attention patterns
and residual streams, activation patching from a corrupted run into a clean one (per layer and
position), hooks added and reset, a gradient through a hooked run, and the cache's decompositions."""
import sys
import warnings

# the torchvision beside torch 2.13 does not import, and transformers (which TransformerLens imports)
# reaches for it whenever it can find it: hidden, it is not found (both frameworks see the same)
sys.modules["torchvision"] = None
import numpy as np
import torch
from transformer_lens.config import TransformerBridgeConfig
from transformer_lens.model_bridge.sources import native

from _common import emit

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
cfg = TransformerBridgeConfig(d_model=16, d_head=4, n_heads=4, n_layers=2, n_ctx=8, d_vocab=11, d_mlp=32,
                              act_fn="gelu", normalization_type="LN", seed=0, dtype=torch.float64)
model = native.boot(cfg, dtype=torch.float64)
with torch.no_grad():  # the same weights on either framework
    rng = np.random.default_rng(0)
    for p in model.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.3, dtype=torch.float64))
model.eval()
clean = torch.tensor([[1, 4, 2, 7, 3, 9], [0, 5, 5, 2, 8, 1]])
corrupt = torch.tensor([[1, 4, 6, 7, 3, 9], [0, 5, 3, 2, 8, 1]])
results = {}

logits, cache = model.run_with_cache(clean)
results["logits"] = logits
names = sorted(cache.keys())
results["cache_names"] = names
results["cache_shapes"] = {name: list(cache[name].shape) for name in names}
results["cache_sums"] = {name: float(cache[name].double().sum()) for name in names}

pattern_names = [n for n in names if n.endswith("hook_pattern")]
resid_names = [n for n in names if "resid" in n]
seen = []


def record(tensor, hook):
    seen.append([hook.name, list(tensor.shape), float(tensor.sum())])


def ablate_head(pattern, hook):
    pattern = pattern.clone()
    pattern[:, 1] = 0.0
    return pattern


results["hooked"] = model.run_with_hooks(clean, fwd_hooks=[(pattern_names[0], record), (resid_names[-1], record),
                                                           (pattern_names[-1], ablate_head)])
results["seen"] = seen
results["after_reset"] = model(clean)

# activation patching: the clean residual stream at one position into the corrupted run
clean_logits, clean_cache = model.run_with_cache(clean)
corrupt_logits = model(corrupt)
answer = 3


def metric(out):
    return float((out[:, -1, answer] - out[:, -1, 0]).mean())


patched = []
layer_resid = [n for n in names if n.endswith("hook_resid_pre")]
for name in layer_resid:
    row = []
    for pos in range(clean.shape[1]):
        def patch(resid, hook, pos=pos):
            resid[:, pos] = clean_cache[hook.name][:, pos]
            return resid
        row.append(metric(model.run_with_hooks(corrupt, fwd_hooks=[(name, patch)])))
    patched.append(row)
results["patching"] = {"clean": metric(clean_logits), "corrupt": metric(corrupt_logits), "grid": patched}

# hooks with a name filter and a gradient through the hooked run
grads = {}


def keep_grad(tensor, hook):
    tensor.retain_grad()
    grads[hook.name] = tensor
    return tensor


out = model.run_with_hooks(clean, fwd_hooks=[(lambda n: n.endswith("hook_resid_mid"), keep_grad)])
out[:, -1].logsumexp(-1).sum().backward()
results["grads"] = {name: t.grad for name, t in sorted(grads.items())}
model.zero_grad()

stack, labels = clean_cache.decompose_resid(return_labels=True)
results["decompose_resid"] = [stack, labels]
acc, acc_labels = clean_cache.accumulated_resid(return_labels=True)
results["accumulated_resid"] = [acc, acc_labels]
emit(results)

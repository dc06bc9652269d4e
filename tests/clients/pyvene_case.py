"""pyvene interventions on a tiny GPT-2 built from a config (no download): interchange interventions
between a base and a source run at chosen positions of block, MLP and attention outputs, addition,
subtraction and zeroing, collected activations, and trainable rotated-space (orthogonal
parametrization), low-rank and sigmoid-mask interventions with a training step through them."""
import sys
import warnings

# the torchvision beside torch 2.13 does not import, and transformers (which pyvene imports) reaches
# for it whenever it can find it: hidden, it is not found (both frameworks see the same)
sys.modules["torchvision"] = None
import numpy as np
import pyvene as pv
import torch
from transformers import GPT2Config, GPT2Model
from transformers.utils import logging

from _common import emit

warnings.simplefilter("ignore")
logging.set_verbosity_error()
torch.set_default_dtype(torch.float64)
gpt2 = GPT2Model(GPT2Config(vocab_size=13, n_positions=16, n_embd=16, n_layer=2, n_head=4, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager",
                            bos_token_id=0, eos_token_id=0)).double()
rng = np.random.default_rng(0)
with torch.no_grad():
    for p in gpt2.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.2))
gpt2.eval()
base = {"input_ids": torch.tensor([[1, 5, 2, 7, 3, 9], [2, 2, 8, 1, 0, 4]])}
source = {"input_ids": torch.tensor([[4, 0, 6, 2, 8, 1], [7, 3, 3, 5, 9, 6]])}
results = {"plain": gpt2(**base).last_hidden_state}

for component in ("block_output", "mlp_output", "attention_output", "block_input", "mlp_activation"):
    config = pv.IntervenableConfig({"layer": 0, "component": component}, intervention_types=pv.VanillaIntervention)
    model = pv.IntervenableModel(config, gpt2)
    original, swapped = model(base, [source], {"sources->base": ([[[1, 3], [0, 2]]], [[[1, 3], [0, 2]]])},
                              output_original_output=True)
    results[f"vanilla_{component}"] = [original.last_hidden_state, swapped.last_hidden_state]

for kind in (pv.AdditionIntervention, pv.SubtractionIntervention):
    model = pv.IntervenableModel(pv.IntervenableConfig({"layer": 1, "component": "block_output"},
                                                       intervention_types=kind), gpt2)
    results[kind.__name__] = model(base, [source], {"sources->base": 2})[1].last_hidden_state

model = pv.IntervenableModel(pv.IntervenableConfig({"layer": 1, "component": "mlp_output"},
                                                   intervention_types=pv.ZeroIntervention), gpt2)
results["zero"] = model(base, unit_locations={"base": 4})[1].last_hidden_state

collect = pv.IntervenableModel(pv.IntervenableConfig(
    [{"layer": 0, "component": "block_output", "intervention_type": pv.CollectIntervention},
     {"layer": 1, "component": "attention_output", "intervention_type": pv.CollectIntervention}]), gpt2)
(_, collected), _ = collect(base, unit_locations={"base": [[[1, 2]] * 2, [[0, 5]] * 2]})
results["collected"] = collected

torch.manual_seed(0)
trained = {}
for kind, extra in ((pv.RotatedSpaceIntervention, {}), (pv.LowRankRotatedSpaceIntervention, {"low_rank_dimension": 3}),
                    (pv.SigmoidMaskIntervention, {})):
    representation = pv.RepresentationConfig(layer=0, component="block_output", **extra)
    config = pv.IntervenableConfig(representations=[representation], intervention_types=kind)
    model = pv.IntervenableModel(config, gpt2)
    model.disable_model_gradients()
    intervention = list(model.interventions.values())[0]
    with torch.no_grad():
        draw = np.random.default_rng(5)
        for p in intervention.parameters():
            p.copy_(torch.tensor(draw.standard_normal(tuple(p.shape)) * 0.3))
    if kind is pv.RotatedSpaceIntervention:
        intervention.set_interchange_dim(6)  # (swapping every rotated coordinate would undo the rotation)
    subspaces = [[[0, 2], [0, 2]]] if kind is pv.LowRankRotatedSpaceIntervention else None
    parameters = [p for p in intervention.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(parameters, lr=0.1)
    losses = []
    for step in range(3):
        out = model(base, [source], {"sources->base": 3}, subspaces=subspaces)[1].last_hidden_state
        loss = out[:, -1].square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss)
    trained[kind.__name__] = {"losses": losses, "grads": [p.grad for p in parameters],
                              "params": [p.detach() for p in intervention.parameters()]}
results["trained"] = trained
results["after"] = gpt2(**base).last_hidden_state  # the model itself is left unchanged
emit(results)

"""Hugging Face transformers on tiny GPT-2, BERT and ViT models built from configs (no download):
hidden states and attentions returned, forward hooks on every attention module and forward pre-hooks on
the blocks, a hook that scales an MLP output, gradients with gradient checkpointing on and off, the
language-model loss, and greedy generation."""
import sys
import warnings

# the torchvision beside torch 2.13 does not import, and transformers reaches for it whenever it can
# find it: hidden, it is not found (both frameworks see the same)
sys.modules["torchvision"] = None
import numpy as np
import torch
from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel, ViTConfig, ViTModel
from transformers.utils import logging

from _common import emit

warnings.simplefilter("ignore")
logging.set_verbosity_error()
torch.set_default_dtype(torch.float64)


def filled(model, seed=0):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * 0.2, dtype=torch.float64))
    return model


results = {}
gpt2 = filled(GPT2LMHeadModel(GPT2Config(vocab_size=13, n_positions=16, n_embd=16, n_layer=2, n_head=4,
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                         attn_implementation="eager")).double())
gpt2.eval()
ids = torch.tensor([[1, 5, 2, 7, 3, 9], [4, 0, 6, 2, 8, 1]])
seen = []
handles = []
for name, module in gpt2.named_modules():
    if name.endswith(".attn"):
        handles.append(module.register_forward_hook(
            lambda m, args, kwargs, out, name=name: seen.append([name, len(args), sorted(kwargs),
                                                                 float(out[0].sum())]), with_kwargs=True))
    if name.endswith(".mlp"):
        handles.append(module.register_forward_hook(lambda m, args, out: out * 0.5))
    if name.startswith("transformer.h.") and name.count(".") == 2:
        handles.append(module.register_forward_pre_hook(
            lambda m, args, name=name: seen.append([name, list(args[0].shape)])))
out = gpt2(ids, labels=ids, output_hidden_states=True, output_attentions=True)
# (transformers takes the loss in float32 whatever the model's dtype: compared to float32 precision)
results["gpt2"] = {"logits": out.logits, "loss": round(float(out.loss), 5), "hidden": list(out.hidden_states),
                   "attentions": list(out.attentions), "seen": seen}
for handle in handles:
    handle.remove()
results["gpt2_unhooked"] = gpt2(ids).logits

grads = {}
for checkpointing in (False, True):
    gpt2.train()
    gpt2.config.use_cache = False
    if checkpointing:
        gpt2.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    gpt2.zero_grad()
    logits = gpt2(ids).logits
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 13), ids[:, 1:].reshape(-1))
    loss.backward()
    grads[str(checkpointing)] = {"loss": loss, "wte": gpt2.transformer.wte.weight.grad,
                                 "c_attn": gpt2.transformer.h[0].attn.c_attn.weight.grad}
results["gpt2_grads"] = grads
gpt2.gradient_checkpointing_disable()
gpt2.eval()
gpt2.config.use_cache = True
results["generate"] = gpt2.generate(ids[:, :3], max_new_tokens=4, do_sample=False, pad_token_id=0).tolist()

bert = filled(BertModel(BertConfig(vocab_size=17, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=24, max_position_embeddings=16,
                                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                   attn_implementation="eager")).double(), seed=1)
bert.eval()
captured = {}
for name, module in bert.named_modules():
    if name.endswith("attention.self"):
        module.register_forward_hook(lambda m, args, out, name=name: captured.setdefault(name, out[0]))
mask = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
bout = bert(ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)
results["bert"] = {"last": bout.last_hidden_state, "pooled": bout.pooler_output, "hidden": list(bout.hidden_states),
                   "attentions": list(bout.attentions), "captured": captured}

vit = filled(ViTModel(ViTConfig(image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=24, attn_implementation="sdpa")).double(),
             seed=2)
vit.eval()
pixels = torch.tensor(np.random.default_rng(3).standard_normal((2, 3, 8, 8)))
pixels.requires_grad_(True)
# (ViT's eager attention takes its softmax in float32, whose last bits differ between the frameworks:
# scaled_dot_product_attention keeps float64)
vout = vit(pixel_values=pixels, output_hidden_states=True)
vout.pooler_output.square().sum().backward()
results["vit"] = {"last": vout.last_hidden_state, "hidden": list(vout.hidden_states), "pixel_grad": pixels.grad}
emit(results)

"""x-transformers (einops/einx heavy) float64 models: a decoder-only language model with rotary
embeddings, pre/post branch options and attention intermediates, an encoder with ALiBi and a memory
mask, an encoder-decoder, a continuous-input transformer, the autoregressive wrapper's loss and greedy
generation; forward hooks on every attention module record what they return, and gradients flow to
the parameters."""
import torch
from torch import nn
from x_transformers import (AutoregressiveWrapper, ContinuousTransformerWrapper, Decoder, Encoder,
                            TransformerWrapper, XTransformer)

from _common import data, emit, fill

# float64 throughout: the rotary frequencies are made in float32 (a float64 model's .double() converts them)
# and attention without qk-norm takes its softmax in float32, where torch's vectorized exp, sin and cos
# are not correctly rounded (hookgrad's are): those would differ in the last float32 bits
torch.set_default_dtype(torch.float64)
tokens = torch.tensor([[1, 5, 7, 2, 9, 3, 4, 0], [6, 2, 8, 8, 1, 0, 5, 7]])
mask = torch.tensor([[True] * 8, [True] * 6 + [False] * 2])


def hooked(model):
    """A forward hook on each attention module: the output's shape and sum, in call order."""
    seen = []
    for name, module in model.named_modules():
        if type(module).__name__ == "Attention":
            module.register_forward_hook(lambda m, args, out, name=name: seen.append(
                [name, list(out[0].shape) if isinstance(out, tuple) else list(out.shape),
                 (out[0] if isinstance(out, tuple) else out).sum()]))
    return seen


def grads(model):
    return [[name, p.grad.norm()] for name, p in model.named_parameters() if p.grad is not None]


results = {}
torch.manual_seed(0)
decoder = fill(TransformerWrapper(num_tokens=12, max_seq_len=16, attn_layers=Decoder(
    dim=8, depth=2, heads=2, rotary_pos_emb=True, rotary_emb_dim=4, attn_dim_head=4, ff_mult=2, ff_glu=True,
    use_rmsnorm=True, residual_attn=True, attn_qk_norm=True)).double(), scale=0.3).eval()
seen = hooked(decoder)
logits, intermediates = decoder(tokens, mask=mask, return_intermediates=True)
logits[mask].logsumexp(-1).sum().backward()
results["decoder"] = {"logits": logits, "hooks": seen, "grads": grads(decoder),
                      "attn_maps": [i.post_softmax_attn for i in intermediates.attn_intermediates]}

torch.manual_seed(0)
encoder = fill(TransformerWrapper(num_tokens=12, max_seq_len=16, use_abs_pos_emb=False, attn_layers=Encoder(
    dim=8, depth=2, heads=2, alibi_pos_bias=True, attn_dim_head=4, pre_norm=False, attn_gate_values=True,
    ff_relu_squared=True, attn_qk_norm=True)), scale=0.3).eval()
seen = hooked(encoder)
embedded = encoder(tokens, mask=mask, return_embeddings=True)
embedded[mask].pow(2).sum().backward()
results["encoder"] = {"embeddings": embedded, "hooks": seen, "grads": grads(encoder)}

torch.manual_seed(0)
seq2seq = fill(XTransformer(dim=8, enc_num_tokens=12, enc_depth=1, enc_heads=2, enc_max_seq_len=16,
                            dec_num_tokens=12, dec_depth=1, dec_heads=2, dec_max_seq_len=16, tie_token_emb=True,
                            enc_attn_dim_head=4, dec_attn_dim_head=4,
                            enc_attn_qk_norm=True, dec_attn_qk_norm=True), scale=0.3).eval()
seen = hooked(seq2seq)
loss = seq2seq(tokens, tokens.flip(-1), mask=mask)
loss.backward()
results["xtransformer"] = {"loss": loss, "hooks": seen, "grads": grads(seq2seq)}

torch.manual_seed(0)
continuous = fill(ContinuousTransformerWrapper(dim_in=3, dim_out=2, max_seq_len=16, attn_layers=Encoder(
    dim=8, depth=1, heads=2, attn_dim_head=4, rel_pos_bias=True, attn_qk_norm=True)), scale=0.3).eval()
series = data(2, 6, 3)
out = continuous(series, mask=mask[:, :6])
out.sum().backward()
results["continuous"] = {"out": out, "grads": grads(continuous)}

torch.manual_seed(0)
lm = AutoregressiveWrapper(fill(TransformerWrapper(num_tokens=12, max_seq_len=16, attn_layers=Decoder(
    dim=8, depth=1, heads=2, attn_dim_head=4, attn_qk_norm=True)), scale=0.3)).eval()
loss = lm(tokens)
loss.backward()
with torch.no_grad():
    generated = lm.generate(tokens[:, :3], 5, temperature=0.0)
results["autoregressive"] = {"loss": loss, "generated": generated, "grads": grads(lm)}
emit(results)

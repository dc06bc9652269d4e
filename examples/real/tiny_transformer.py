"""A small transformer encoder classifying synthetic token sequences: an ordinary PyTorch script.

Task: each sequence (variable length, right-padded) is labelled 1 when its first token appears
again later in the sequence, else 0 — the model must compare positions, which attention does.

Run it on PyTorch (``python tiny_transformer.py``) or on hookgrad
(``python -m hookgrad run tiny_transformer.py``); the numpy-made weights and batches make both
print the same losses. ``--steps N`` (or EXAMPLE_STEPS) sets the run length.
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn

VOCAB, PAD, MAX_LEN = 12, 0, 10


def make_batch(rng, batch):
    lengths = rng.integers(4, MAX_LEN + 1, batch)
    tokens = np.full((batch, MAX_LEN), PAD, dtype=np.int64)
    labels = np.zeros(batch, dtype=np.int64)
    for i, n in enumerate(lengths):
        seq = rng.integers(1, VOCAB, n)
        if rng.random() < 0.5:  # positive: the first token comes back somewhere
            seq[rng.integers(1, n)] = seq[0]
        else:                   # negative: it never does
            seq[1:][seq[1:] == seq[0]] = seq[0] % (VOCAB - 1) + 1
        tokens[i, :n] = seq
        labels[i] = int(seq[0] in seq[1:])
    return torch.from_numpy(tokens), torch.from_numpy(labels), torch.from_numpy(tokens == PAD)


class TinyTransformer(nn.Module):
    def __init__(self, d_model=32, nhead=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        self.pos = nn.Parameter(torch.zeros(1, MAX_LEN, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, norm=nn.LayerNorm(d_model))
        self.head = nn.Linear(d_model, 2)

    def forward(self, tokens, padding):
        h = self.encoder(self.embed(tokens) + self.pos, src_key_padding_mask=padding)
        return self.head(h[:, 0])                         # the first position asks "am I repeated?"


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        shape = tuple(value.shape)
        if "norm" in name:                                # LayerNorm: keep ones and zeros
            state[name] = value
            continue
        if name.startswith("embed") or name == "pos":
            data = 0.5 * rng.standard_normal(shape)
        else:
            bound = 1.0 / math.sqrt(shape[-1] if len(shape) > 1 else 32)
            data = rng.uniform(-bound, bound, shape)
        state[name] = torch.tensor(data.astype(np.float32))
    model.load_state_dict(state)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=int(os.environ.get("EXAMPLE_STEPS", 200)))
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    rng = np.random.default_rng(7)
    model = TinyTransformer()
    numpy_init(model, seed=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()

    every = max(1, args.steps // 12)
    for step in range(args.steps):
        tokens, labels, padding = make_batch(rng, args.batch_size)
        logits = model(tokens, padding)
        loss = loss_fn(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % every == 0 or step == args.steps - 1:
            accuracy = (logits.argmax(1) == labels).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.6f}  batch_accuracy {accuracy:.3f}")

    model.eval()
    tokens, labels, padding = make_batch(np.random.default_rng(99), 256)
    with torch.no_grad():
        logits = model(tokens, padding)
    print(f"held-out  loss {loss_fn(logits, labels).item():.6f}  "
          f"accuracy {(logits.argmax(1) == labels).float().mean().item():.3f}")


if __name__ == "__main__":
    main()

"""A character-level LSTM language model on a short embedded text: an ordinary PyTorch script.

Run it on PyTorch (``python char_lstm.py``) or on hookgrad (``python -m hookgrad run char_lstm.py``);
with the same numpy-made initial weights and the same numpy-chosen training windows, both print
the same losses. ``--steps N`` (or the EXAMPLE_STEPS environment variable) sets the run length.
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn

TEXT = (
    "the quick brown fox jumps over the lazy dog. a lazy dog sleeps in the sun while the fox runs "
    "through the tall grass. the sun sets over the hills and the fox returns to its den. the dog "
    "wakes up, stretches, and walks slowly back to the farm house where the farmer waits with "
    "supper. every day the fox and the dog meet again by the old oak tree near the river. "
)


class CharLSTM(nn.Module):
    def __init__(self, vocab, embed=16, hidden=48, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        out, state = self.lstm(self.embed(tokens), state)
        return self.head(out), state


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        shape = tuple(value.shape)
        if name.startswith("embed"):
            data = rng.standard_normal(shape)
        else:
            bound = 1.0 / math.sqrt(shape[-1] if len(shape) > 1 else 48)
            data = rng.uniform(-bound, bound, shape)
        state[name] = torch.tensor(data.astype(np.float32))
    model.load_state_dict(state)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=int(os.environ.get("EXAMPLE_STEPS", 200)))
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=24)
    args = parser.parse_args()

    chars = sorted(set(TEXT))
    index = {c: i for i, c in enumerate(chars)}
    data = np.array([index[c] for c in TEXT], dtype=np.int64)
    rng = np.random.default_rng(3)

    model = CharLSTM(len(chars))
    numpy_init(model, seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    every = max(1, args.steps // 12)
    for step in range(args.steps):
        starts = rng.integers(0, len(data) - args.seq_len - 1, args.batch_size)
        windows = np.stack([data[s:s + args.seq_len + 1] for s in starts])
        x, y = torch.from_numpy(windows[:, :-1]), torch.from_numpy(windows[:, 1:])
        logits, _ = model(x)
        loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        if step % every == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.6f}  grad_norm {norm.item():.6f}")

    # greedy continuation of a prompt, one character at a time with the carried state
    model.eval()
    with torch.no_grad():
        prompt = "the fox "
        logits, state = model(torch.tensor([[index[c] for c in prompt]]))
        text = prompt
        for _ in range(40):
            nxt = int(logits[0, -1].argmax())
            text += chars[nxt]
            logits, state = model(torch.tensor([[nxt]]), state)
    print("sample:", repr(text))


if __name__ == "__main__":
    main()

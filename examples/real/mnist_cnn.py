"""A small CNN classifier on 8x8 handwritten digits: an ordinary PyTorch script.

Run it on PyTorch (``python mnist_cnn.py``) or on hookgrad (``python -m hookgrad run mnist_cnn.py``);
with the same numpy-made initial weights and batch order, both print the same losses.

Data: the UCI handwritten digits bundled with hookgrad (``src/hookgrad/data/digits.csv.gz``,
CC BY 4.0), read with numpy; ``--data PATH`` points elsewhere. Without the file, a small synthetic
set (numpy, fixed seed) stands in.
"""
import argparse
import gzip
import math
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "src" / "hookgrad" / "data" / "digits.csv.gz"


def load_digits(path):
    if path is not None and Path(path).exists():
        with gzip.open(path, "rt") as f:
            table = np.loadtxt(f, delimiter=",", dtype=np.float32)
        images, labels = table[:, :64] / 16.0, table[:, 64].astype(np.int64)
    else:  # synthetic stand-in: ten noisy prototype images
        rng = np.random.default_rng(0)
        prototypes = rng.random((10, 64)).astype(np.float32)
        labels = rng.integers(0, 10, 1000)
        images = np.clip(prototypes[labels] + 0.3 * rng.standard_normal((1000, 64)), 0, 1).astype(np.float32)
    return images.reshape(-1, 1, 8, 8), labels


class DigitCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))        # 8 x 4 x 4
        x = self.pool(F.relu(self.conv2(x)))        # 16 x 2 x 2
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def numpy_init(model, seed):
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights made by numpy, so any framework starts equal."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        shape = tuple(value.shape)
        weight = model.get_parameter(name.replace(".bias", ".weight")) if name.endswith("bias") else value
        fan_in = int(np.prod(weight.shape[1:]))
        bound = 1.0 / math.sqrt(fan_in)
        state[name] = torch.from_numpy(rng.uniform(-bound, bound, shape).astype(np.float32))
    model.load_state_dict(state)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=int(os.environ.get("EXAMPLE_STEPS", 300)))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    args = parser.parse_args()

    images, labels = load_digits(args.data)
    order = np.random.default_rng(1).permutation(len(labels))
    images, labels = images[order], labels[order]
    split = len(labels) * 4 // 5
    train = TensorDataset(torch.from_numpy(images[:split]), torch.from_numpy(labels[:split]))
    test_x, test_y = torch.from_numpy(images[split:]), torch.from_numpy(labels[split:])
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=False, drop_last=True)

    model = DigitCNN()
    numpy_init(model, seed=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    every = max(1, args.steps // 12)
    step = 0
    while step < args.steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if step % every == 0 or step == args.steps - 1:
                print(f"step {step:4d}  loss {loss.item():.6f}")
            step += 1
            if step >= args.steps:
                break

    model.eval()
    with torch.no_grad():
        logits = model(test_x)
        accuracy = (logits.argmax(dim=1) == test_y).float().mean().item()
        test_loss = loss_fn(logits, test_y).item()
    print(f"test  loss {test_loss:.6f}  accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()

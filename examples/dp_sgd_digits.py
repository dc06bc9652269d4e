"""Differentially private SGD (DP-SGD) on the bundled 8x8 digits, with per-sample gradients from
hookgrad.tools.PerSampleGradients.

Each step draws a batch by Poisson sampling (every training image joins with probability q),
computes every sample's own gradient, clips it to norm C, sums the clipped gradients, adds Gaussian
noise of standard deviation sigma * C to the sum, divides by the expected batch size and takes an
SGD step. The privacy spent is computed with the Renyi-DP accountant of the sampled Gaussian
mechanism (Mironov, Talwar and Zhang 2019, integer orders 2..256), converted to (epsilon, delta)
with the bound of Balle et al. 2020 (the conversion Opacus uses).

Run: python examples/dp_sgd_digits.py [--epochs 15] [--sigma 1.0] [--clip 1.0] [--batch 64]
"""
import argparse
import math
import time

import numpy as np

import hookgrad as torch
import hookgrad.nn as nn
from hookgrad.data import load_digits
from hookgrad.tools import PerSampleGradients

HELD_OUT = 360
ORDERS = range(2, 257)


# ---- the privacy accountant ---------------------------------------------------------------------
def _log_a(q: float, sigma: float, alpha: int) -> float:
    """log A_alpha of the sampled Gaussian mechanism for an integer order (a sum over the binomial
    expansion, in log space)."""
    terms = [math.lgamma(alpha + 1) - math.lgamma(k + 1) - math.lgamma(alpha - k + 1)
             + k * math.log(q) + (alpha - k) * math.log1p(-q) + (k * k - k) / (2 * sigma ** 2)
             for k in range(alpha + 1)]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def rdp_epsilon(q: float, sigma: float, steps: int, delta: float) -> tuple[float, int]:
    """(epsilon, best order) after ``steps`` steps of sampling rate ``q`` and noise multiplier
    ``sigma``, for the given ``delta``."""
    best = (math.inf, 0)
    for alpha in ORDERS:
        if q == 0:
            rdp = 0.0
        elif q == 1.0:
            rdp = alpha / (2 * sigma ** 2)
        else:
            rdp = _log_a(q, sigma, alpha) / (alpha - 1)
        rdp *= steps
        eps = rdp - (math.log(delta) + math.log(alpha)) / (alpha - 1) + math.log((alpha - 1) / alpha)
        best = min(best, (eps, alpha))
    return best


# ---- data, model, training ----------------------------------------------------------------------
def digits(seed: int):
    images, labels = load_digits()
    order = np.random.default_rng(seed).permutation(len(labels))
    x = (images / 16.0).reshape(len(labels), 64).astype(np.float32)
    test, train = order[:HELD_OUT], order[HELD_OUT:]
    return torch.tensor(x[train]), torch.tensor(labels[train]), torch.tensor(x[test]), torch.tensor(labels[test])


def accuracy(model, x, y) -> float:
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def dp_sgd_step(model, tool, optimizer, x, y, clip: float, sigma: float, expected_batch: float) -> None:
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer.zero_grad()
    tool.clear()
    if len(y):
        nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
        rows = [p.grad_sample.reshape(len(y), -1) for p in params]
        norms = torch.cat(rows, 1).norm(dim=1)
        scale = (clip / (norms + 1e-6)).clamp(max=1.0)          # each sample's gradient to norm <= clip
    for i, p in enumerate(params):
        total = (rows[i] * scale[:, None]).sum(0).reshape(p.shape) if len(y) else torch.zeros_like(p)
        p.grad = (total + torch.randn(p.shape) * sigma * clip) / expected_batch
    optimizer.step()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--sigma", type=float, default=1.0, help="noise multiplier")
    ap.add_argument("--clip", type=float, default=1.0, help="per-sample gradient norm bound C")
    ap.add_argument("--batch", type=int, default=64, help="expected batch size (Poisson sampling)")
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    x_train, y_train, x_test, y_test = digits(args.seed)
    n = len(y_train)
    q = args.batch / n
    steps_per_epoch = round(1 / q)
    model = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.5)
    start, steps = time.perf_counter(), 0
    with PerSampleGradients(model, loss_reduction="sum") as tool:
        for epoch in range(1, args.epochs + 1):
            for _ in range(steps_per_epoch):
                chosen = torch.tensor(np.flatnonzero(rng.random(n) < q))
                dp_sgd_step(model, tool, optimizer, x_train[chosen], y_train[chosen], args.clip, args.sigma, args.batch)
                steps += 1
            eps, _ = rdp_epsilon(q, args.sigma, steps, args.delta)
            print(f"epoch {epoch:2d}  held-out accuracy {accuracy(model, x_test, y_test):.3f}  epsilon {eps:.2f}")
    acc = accuracy(model, x_test, y_test)
    eps, order = rdp_epsilon(q, args.sigma, steps, args.delta)
    print(f"held-out accuracy {acc:.3f} after {steps} steps ({time.perf_counter() - start:.1f} s)")
    print(f"privacy: noise multiplier {args.sigma}, clip norm {args.clip}, sampling rate {q:.4f} "
          f"(expected batch {args.batch} of {n}), steps {steps}")
    print(f"(epsilon, delta) = ({eps:.2f}, {args.delta:g}) by the RDP accountant (best order {order})")
    return {"accuracy": acc, "epsilon": eps, "steps": steps, "sampling_rate": q}


if __name__ == "__main__":
    main()

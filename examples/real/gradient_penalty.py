"""WGAN-GP on a 2-D ring of eight Gaussians: an ordinary PyTorch script using double backward.

The critic's gradient penalty needs the gradient of the critic with respect to its input as part
of the loss: ``torch.autograd.grad(..., create_graph=True)``, then ``backward()`` through it.

Run it on PyTorch (``python gradient_penalty.py``) or on hookgrad
(``python -m hookgrad run gradient_penalty.py``); numpy makes the initial weights, the data and the
noise, so both print the same losses. ``--steps N`` (or EXAMPLE_STEPS) sets the run length.
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn


def ring_of_gaussians(rng, n):
    angles = rng.integers(0, 8, n) * (2 * math.pi / 8)
    centers = np.stack([np.cos(angles), np.sin(angles)], axis=1) * 2.0
    return (centers + 0.05 * rng.standard_normal((n, 2))).astype(np.float32)


def mlp(n_in, n_out, hidden=32):
    return nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, n_out))


def numpy_init(model, seed):
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        shape = tuple(value.shape)
        fan_in = shape[1] if len(shape) > 1 else 32
        bound = 1.0 / math.sqrt(fan_in)
        state[name] = torch.tensor(rng.uniform(-bound, bound, shape).astype(np.float32))
    model.load_state_dict(state)


def gradient_penalty(critic, real, fake, alpha):
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(mixed)
    (grads,) = torch.autograd.grad(outputs=scores, inputs=mixed, grad_outputs=torch.ones_like(scores),
                                   create_graph=True, retain_graph=True)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=int(os.environ.get("EXAMPLE_STEPS", 300)))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--critic-steps", type=int, default=3)
    parser.add_argument("--penalty", type=float, default=10.0)
    args = parser.parse_args()

    rng = np.random.default_rng(5)
    generator, critic = mlp(4, 2), mlp(2, 1)
    numpy_init(generator, seed=1)
    numpy_init(critic, seed=2)
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))

    every = max(1, args.steps // 12)
    for step in range(args.steps):
        for _ in range(args.critic_steps):
            real = torch.from_numpy(ring_of_gaussians(rng, args.batch_size))
            noise = torch.from_numpy(rng.standard_normal((args.batch_size, 4)).astype(np.float32))
            alpha = torch.from_numpy(rng.random((args.batch_size, 1)).astype(np.float32))
            with torch.no_grad():
                fake = generator(noise)
            penalty = gradient_penalty(critic, real, fake, alpha)
            critic_loss = critic(fake).mean() - critic(real).mean() + args.penalty * penalty
            opt_c.zero_grad()
            critic_loss.backward()
            opt_c.step()

        noise = torch.from_numpy(rng.standard_normal((args.batch_size, 4)).astype(np.float32))
        generator_loss = -critic(generator(noise)).mean()
        opt_g.zero_grad()
        generator_loss.backward()
        opt_g.step()
        if step % every == 0 or step == args.steps - 1:
            print(f"step {step:4d}  critic {critic_loss.item():.6f}  penalty {penalty.item():.6f}  "
                  f"generator {generator_loss.item():.6f}")

    with torch.no_grad():
        samples = generator(torch.from_numpy(rng.standard_normal((512, 4)).astype(np.float32)))
        radius = samples.norm(dim=1)
    print(f"samples  mean radius {radius.mean().item():.4f}  (the ring has radius 2)")


if __name__ == "__main__":
    main()

"""Random permutations and integers for samplers, drawn from hookgrad's generators."""
from __future__ import annotations


def randperm(n: int, generator=None) -> list:
    """A random permutation of ``range(n)`` as a list of ints."""
    import hookgrad
    return hookgrad.randperm(n, generator=generator).tolist()


def randint(high: int, size: int, generator=None) -> list:
    """``size`` random ints in ``[0, high)``."""
    import hookgrad
    return hookgrad.randint(0, high, (size,), generator=generator).tolist()


def fresh_generator():
    """A new generator seeded from the global one, as torch's samplers without a generator make it
    (``empty((), int64).random_()``: one 64-bit draw), so shuffles match torch's after ``manual_seed``."""
    import hookgrad
    seed = int(hookgrad.empty((), dtype=hookgrad.int64).random_().item())
    gen = hookgrad.Generator()
    gen.manual_seed(seed)
    return gen

"""Randomised differential scenarios: seeded sequences of hook registrations (every kind, local
and global, prepend or not), removals and calls on a small module tree; the log of which hook
fired, in what order, with what gradient shapes, must be the same on torch and hookgrad."""
from __future__ import annotations

import random

import pytest

from difftest import differential
from test_module_fixtures import clean_globals, leaf, mods, shapes

LOCAL_KINDS = ["fwd_pre", "fwd_pre_kw", "fwd", "fwd_kw", "bw_pre", "bw"]
GLOBAL_KINDS = ["g_fwd_pre", "g_fwd", "g_bw_pre", "g_bw"]


def _scaled(grads, factor):
    return tuple(None if g is None else g * factor for g in grads)


def _register(T, mm, target, kind, label, log, prepend, modify=False):
    if modify:
        return _register_modifying(T, mm, target, kind, label, log, prepend)
    if kind == "fwd_pre":
        return target.register_forward_pre_hook(lambda m, a: log.append((label, type(m).__name__)), prepend=prepend)
    if kind == "fwd_pre_kw":
        return target.register_forward_pre_hook(lambda m, a, kw: log.append((label, type(m).__name__, sorted(kw))),
                                                prepend=prepend, with_kwargs=True)
    if kind == "fwd":
        return target.register_forward_hook(lambda m, a, o: log.append((label, type(m).__name__)), prepend=prepend)
    if kind == "fwd_kw":
        return target.register_forward_hook(lambda m, a, kw, o: log.append((label, type(m).__name__)),
                                            prepend=prepend, with_kwargs=True)
    if kind == "bw_pre":
        return target.register_full_backward_pre_hook(
            lambda m, go: log.append((label, type(m).__name__, shapes(go))), prepend=prepend)
    if kind == "bw":
        return target.register_full_backward_hook(
            lambda m, gi, go: log.append((label, type(m).__name__, shapes(gi), shapes(go))), prepend=prepend)
    if kind == "g_fwd_pre":
        return mm.register_module_forward_pre_hook(lambda m, a: log.append((label, type(m).__name__)))
    if kind == "g_fwd":
        return mm.register_module_forward_hook(lambda m, a, o: log.append((label, type(m).__name__)))
    if kind == "g_bw_pre":
        return mm.register_module_full_backward_pre_hook(lambda m, go: log.append((label, type(m).__name__, shapes(go))))
    if kind == "g_bw":
        return mm.register_module_full_backward_hook(
            lambda m, gi, go: log.append((label, type(m).__name__, shapes(gi), shapes(go))))
    raise ValueError(kind)


def _register_modifying(T, mm, target, kind, label, log, prepend):
    """Hooks that also change what flows: inputs, outputs or gradients (scaled by 2, 3, 0.5)."""
    def note(*what):
        log.append((label,) + what)

    if kind == "fwd_pre":
        return target.register_forward_pre_hook(lambda m, a: note(type(m).__name__) or (a[0] * 2,), prepend=prepend)
    if kind == "fwd_pre_kw":
        return target.register_forward_pre_hook(lambda m, a, kw: note(type(m).__name__) or ((a[0] * 2,), kw),
                                                prepend=prepend, with_kwargs=True)
    if kind in ("fwd", "fwd_kw"):
        return target.register_forward_hook(lambda m, a, o: note(type(m).__name__, o) or o * 3, prepend=prepend)
    if kind == "bw_pre":
        return target.register_full_backward_pre_hook(
            lambda m, go: note(type(m).__name__, go) or _scaled(go, 0.5), prepend=prepend)
    if kind == "bw":
        return target.register_full_backward_hook(
            lambda m, gi, go: note(type(m).__name__, gi, go) or _scaled(gi, 3.0), prepend=prepend)
    if kind == "g_fwd_pre":
        return mm.register_module_forward_pre_hook(lambda m, a: note(type(m).__name__) or a[0] + 1)
    if kind == "g_fwd":
        return mm.register_module_forward_hook(lambda m, a, o: note(type(m).__name__) or o - 1)
    if kind == "g_bw_pre":
        return mm.register_module_full_backward_pre_hook(lambda m, go: note(type(m).__name__, go) or _scaled(go, 2.0))
    if kind == "g_bw":
        return mm.register_module_full_backward_hook(lambda m, gi, go: note(type(m).__name__, gi) or _scaled(gi, 0.5))
    raise ValueError(kind)


@pytest.mark.parametrize("seed", range(24))
@differential
def test_random_hook_programs(T, seed):
    rng = random.Random(seed)
    log = []
    net = mods(T).Net()
    targets = [net, net.fc1, net.act, net.fc2]
    handles = []
    with clean_globals(T) as mm:
        for step in range(rng.randint(6, 14)):
            action = rng.random()
            if action < 0.6 or not handles:
                use_global = rng.random() < 0.25
                kind = rng.choice(GLOBAL_KINDS if use_global else LOCAL_KINDS)
                target = rng.choice(targets)
                handles.append(_register(T, mm, target, kind, f"{kind}#{step}", log, rng.random() < 0.3,
                                         modify=seed >= 12 and rng.random() < 0.5))
            elif action < 0.8:
                handles.pop(rng.randrange(len(handles))).remove()
            else:
                log.append(("call", step))
                x = leaf(T)
                net(x).sum().backward()
                log.append(("x.grad", x.grad))
        log.append(("final call",))
        x = leaf(T)
        net(x).sum().backward()
        log.append(("x.grad", x.grad))
        for h in handles:
            h.remove()
    return log

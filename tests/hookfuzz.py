"""Differential hook fuzzer: random hook programs run on torch and on hookgrad, logs compared.

A *program* is plain data (a dict of lists and dicts) generated from a seed: a small model built
from a vocabulary of blocks, and a list of *steps* (hook registrations of every kind, forward,
backward, ``autograd.grad``, in-place ops, optimizer steps, state dicts). ``interpret(T, program)``
runs it against a framework module ``T`` (torch or hookgrad) and returns an *event log*: which hook
fired with which arguments (dtype, shape, values, requires_grad), what it returned, the exception
class and key phrases of every step that raised, warning categories, and the final gradients and
parameters. ``compare`` finds the first event where the two logs differ; ``shrink`` deletes steps,
blocks and options while the same divergence remains, leaving a minimal program; ``render`` prints
a program as Python-like text.

    python tests/hookfuzz.py --n 1000 --seed 0          # full vocabulary, a line per program
    python tests/hookfuzz.py --n 400 --ci -q            # the suite's vocabulary, divergences only

Features that still diverge today are listed in ``KNOWN_DIVERGENT_FEATURES``; the suite's fixed
seeds are generated without them. When a fix lands, delete its line and the suite covers it.

Later vocabulary (nested/tied/twice-called modules, passes run from inside hooks, hooks on
first-order gradients, odd and batched gradients, nested or odd saved-tensor hooks, ``.grad`` set by
hand, ``_saved_*`` reads, the optimizer's state-dict hooks) is drawn from a second random stream, so
a seed keeps every step and option the first stream gives it; likewise a third (more layers and
calls), a fourth (a Tensor-subclass input and a TorchFunctionMode around passes, both logging the
functions that reach their ``__torch_function__`` inside a pass) and a fifth (saved_tensors_hooks
around a pass).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import importlib
import math
import random
import signal
import sys
import time
import warnings
import zlib

# One entry per vocabulary feature that diverges on the current code, naming the divergence.
# The test suite generates its programs without these; `--ci` does the same on the command line.
# Names are those of step_features (one step) and program_features ("combo:", steps that only
# diverge together).
KNOWN_DIVERGENT_FEATURES: dict[str, str] = {
    "combo:float_indices_into_embedding_under_pack_hooks": "given float indices (a forward pre-hook scaled "
                                                           "them), torch's embedding node packs them before its "
                                                           "dtype check raises; hookgrad raises first, with no pack",
    "combo:optimizer_step_on_input_of_hooked_module": "an optimizer step inside a post-accumulate hook changes, in "
                                                      "place, an input wrapped by a full backward hook's view: "
                                                      "torch's second pass first reads that view (the error names "
                                                      "BackwardHookFunction), hookgrad's a view of it (named T)",
    "combo:hooks_under_is_grads_batched": "autograd.grad(is_grads_batched=True): both run one vmapped pass, each "
                                          "hook (and unpack hook) firing once with a batched tensor; the fuzzer's "
                                          "logging calls .detach() on it, which torch's legacy vmap refuses "
                                          "('Batching rule not implemented for aten::detach') and hookgrad's "
                                          "batched tensors allow",
    "saved:unpack_flat": "an unpack hook hands back a tensor of another shape: torch's backward kernels refuse it "
                         "with RuntimeError ('The size of tensor a (3) must match the size of tensor b (6)'); "
                         "hookgrad's NumPy formulas fail with NumPy's ValueError ('could not be broadcast'): the "
                         "same failure, another class (mm and addmm, fixed, refuse it as torch does)",
    "saved:unpack_float32": "an unpack hook hands back a float32 copy of a float64 tensor: torch's backward "
                            "kernels refuse it, each at its own point (softmax, avg_pool: 'expected dtype float for "
                            "`gradOutput`', conv: 'itensor_view_from_dense expects ...', bmm: 'expected scalar type "
                            "Float'); hookgrad's NumPy formulas promote and go on, refusing only in mm/addmm (whose "
                            "refusal matches torch's), so it raises later or not at all; under backward(inputs=...) "
                            "hookgrad's addmm also computes the input gradient torch leaves out, and refuses there",
    "combo:pack_hooks_around_a_create_graph_pass": "saved_tensors_hooks around a create_graph pass pack what "
                                                   "the recorded backward formulas save: hookgrad's nodes compute "
                                                   "the gradient of every input with an edge, torch's only those "
                                                   "the pass needs (autograd.grad toward x alone: hookgrad's "
                                                   "Linear still computes its weight's, whose products save), and "
                                                   "the contraction block's tensordot/cdist backwards save "
                                                   "differently; linear's, mm/bmm's (attention's) and softplus's "
                                                   "saves match",
    "combo:non_tensor_into_conv": "a forward pre-hook hands a float to a Conv1d/Conv2d: torch's conv has "
                                  "overloads, so its TypeError reads 'received an invalid combination of "
                                  "arguments ... expected one of'; hookgrad's names the argument ('must be "
                                  "Tensor, not float'); same class",
}

WIDTH = 3
BATCH = 2
RTOL, ATOL = 1e-6, 1e-7  # absolute: Adam turns gradients that are zero up to rounding into steps of ~1e-9
# Adam divides each gradient by its own magnitude plus eps: a gradient that is zero up to rounding
# (attention's key bias gets 1e-12 of noise, which torch's kernels and hookgrad's round differently)
# moves its weight by lr * noise / eps. With eps 1e-6 that stays under ATOL (with torch's default
# 1e-8 it reached 1e-6, seed 16683); a real gradient still moves it by about lr
ADAM_EPS = 1e-6
# parameters, compared after such steps: the noise grows with the gradients' scale (a model whose
# scaling hooks make the loss 1e5 leaves 1e-9 of it, seed 16683 again), and a wrong gradient moves
# a weight by about lr (1e-2), far above this
PARAM_ATOL = 1e-5

BLOCK_KINDS = ["linear", "relu", "tanh", "sigmoid", "seq", "shared", "tuple", "kwargs", "relu_inplace", "reshape",
               "split", "layernorm", "softmax", "inplace_input",
               # layers an outside program reaches for; each maps a (BATCH, WIDTH) float64 tensor to one
               "conv1d", "conv2d", "batchnorm", "batchnorm_eval", "dropout", "embedding", "gelu", "silu", "elu",
               "leaky_relu", "softplus", "hardtanh", "maxpool", "avgpool", "mha", "mha_no_weights", "lstm", "gru",
               "checkpoint", "checkpoint_reentrant", "identity", "modulelist", "moduledict", "weight_norm",
               "parametrize", "function", "function_dirty", "function_once", "contraction",
               "function_nondiff", "function_no_materialize"]
# Each block's parameters (by name; "{}" is the block's name) and its submodules (suffixes).
BLOCK_PARAMS = {"nested_io": ["{}.inner.lin.weight", "{}.inner.lin.bias"], "twice": ["{}.lin.weight"],
                "tied": ["{}.a.weight", "{}.a.bias", "{}.b.bias"], "linear": ["{}.weight", "{}.bias"], "seq": ["{}.0.weight"], "tuple": ["{}.lin.bias"],
                "layernorm": ["{}.weight", "{}.bias"], "kwargs": ["{}.lin.weight"],
                "shared": ["shared.weight", "shared.bias"],
                "conv1d": ["{}.conv.weight", "{}.conv.bias"], "conv2d": ["{}.conv.weight", "{}.conv.bias"],
                "batchnorm": ["{}.weight", "{}.bias"], "batchnorm_eval": ["{}.weight", "{}.bias"],
                "embedding": ["{}.emb.weight"],
                "mha": ["{}.attn.in_proj_weight", "{}.attn.out_proj.bias"],
                "mha_no_weights": ["{}.attn.in_proj_bias", "{}.attn.out_proj.weight"],
                "lstm": ["{}.rnn.weight_ih_l0", "{}.rnn.bias_hh_l0"], "gru": ["{}.rnn.weight_hh_l0", "{}.rnn.bias_ih_l0"],
                "checkpoint": ["{}.inner.0.weight", "{}.inner.0.bias"],
                "checkpoint_reentrant": ["{}.inner.0.weight", "{}.inner.0.bias"],
                "modulelist": ["{}.layers.0.weight"], "moduledict": ["{}.layers.lin.weight"],
                "weight_norm": ["{}.bias", "{}.parametrizations.weight.original0",
                                "{}.parametrizations.weight.original1"],
                "parametrize": ["{}.bias", "{}.parametrizations.weight.original"],
                "contraction": ["{}.weight"]}
BLOCK_SUBMODULES = {"nested_io": [".inner"], "twice": [".lin"], "tied": [".a", ".b"], "seq": [".0", ".1"], "tuple": [".lin"], "kwargs": [".lin"], "conv1d": [".conv"],
                    "conv2d": [".conv"], "embedding": [".emb"], "maxpool": [".pool"], "avgpool": [".pool"],
                    "mha": [".attn"], "mha_no_weights": [".attn", ".attn.out_proj"], "lstm": [".rnn"],
                    "gru": [".rnn"], "checkpoint": [".inner", ".inner.0"],
                    "checkpoint_reentrant": [".inner", ".inner.1"], "modulelist": [".layers", ".layers.0"],
                    "moduledict": [".layers", ".layers.act"]}
# blocks drawn from the second random stream (see generate): a module with nested tuple/list/dict
# inputs, keyword arguments and outputs, one whose Linear is called twice in a forward, and two
# Linears sharing one weight
EXTRA_BLOCK_KINDS = ["nested_io", "twice", "tied"]
# blocks drawn from the third random stream: group norm, a spectral-norm parametrization (whose
# power iteration changes buffers in training), submodules returning a dict or a dataclass, a
# transformer encoder layer, a Bilinear given one tensor twice, PReLU, a block whose first forward
# raises after its inner Linear ran (always_call hooks, a half-set-up backward hook, the next pass)
MORE_BLOCK_KINDS = ["groupnorm", "spectral_norm", "dict_out", "dataclass_out", "transformer", "bilinear", "prelu",
                    "raise_once"]
BLOCK_PARAMS.update({"groupnorm": ["{}.weight", "{}.bias"],
                     "spectral_norm": ["{}.bias", "{}.parametrizations.weight.original"],
                     "dict_out": ["{}.inner.lin.weight"], "dataclass_out": ["{}.inner.lin.bias"],
                     "transformer": ["{}.layer.self_attn.in_proj_weight", "{}.layer.linear1.weight",
                                     "{}.layer.norm2.bias"],
                     "bilinear": ["{}.bil.weight", "{}.bil.bias"], "prelu": ["{}.weight"],
                     "raise_once": ["{}.lin.weight"]})
BLOCK_SUBMODULES.update({"spectral_norm": [".parametrizations.weight.0"], "dict_out": [".inner", ".inner.lin"],
                         "dataclass_out": [".inner"], "transformer": [".layer", ".layer.self_attn", ".layer.linear2"],
                         "bilinear": [".bil"], "raise_once": [".lin"]})
# steps drawn from the third stream: the global hook dicts cleared by hand (as test fixtures do),
# a block replaced by a fresh module (its hooks' handles kept), an lr scheduler stepped, a
# parameter's requires_grad switched back on, the model deep-copied with its hooks (the program
# goes on with the copy; the handles still point at the original's registries), a pass through
# torch.func.functional_call with scaled parameters
MORE_STEPS = ["clear_globals", "rebuild", "sched", "requires_grad_back", "deepcopy", "functional_call"]
SCHEDULERS = ["step", "exponential", "lambda"]
MODULE_HOOK_KINDS = ["fwd_pre", "fwd", "bw_pre", "bw", "legacy_bw"]
GLOBAL_HOOK_KINDS = ["g_fwd_pre", "g_fwd", "g_bw_pre", "g_bw", "g_legacy_bw"]
TENSOR_HOOK_KINDS = ["tensor", "node_pre", "node_post", "post_acc"]
OPT_HOOK_KINDS = ["opt_pre", "opt_post", "g_opt_pre", "g_opt_post"]
# the optimizer's own state-dict hooks (saving and loading its state)
OPT_SD_HOOK_KINDS = ["opt_sd_pre", "opt_sd_post", "opt_load_pre", "opt_load_post"]
# what a backward hook may run inside the pass: autograd.grad or backward on a graph of its own
# (reentrant), or autograd.grad of its create_graph gradient (a second order inside the first)
REENTRANT_ACTS = ["reentrant_grad", "reentrant_backward", "grad_of_grad"]
# saved_tensors_hooks drawn from the second stream: two pairs nested (the inner one wins), a pack
# hook returning a non-tensor (a tuple holding the tensor), unpack hooks returning a non-tensor,
# another dtype or another shape
EXTRA_SAVED = ["nested", "non_tensor", "unpack_non_tensor", "unpack_float32", "unpack_flat"]
# gradients handed to backward / autograd.grad besides the default: another dtype, another shape,
# integers, None for every root
ODD_GRAD_OUTPUTS = ["float32", "wrong_shape", "int", "none"]
# ``.grad`` written or deleted by hand between passes
SET_GRAD_HOW = ["none", "del", "zeros", "ones", "wrong_shape", "wrong_dtype", "requires_grad"]
SD_HOOK_KINDS = ["sd_pre", "sd_post", "load_pre", "load_post"]

# What each hook kind may return besides None ("none"), and what a replacement means. "raise_once"
# raises on the first call only (the next pass must run as in torch); "wrong_shape", "wrong_dtype"
# and "wrong_len" (a tuple one longer) replace a gradient with one torch refuses; "non_tensor"
# replaces a forward's input or output with a plain number. State-dict hooks change what they are
# given in place: "drop_key" deletes the module's first key, "error" adds a loading error,
# "clear_missing" and "add_unexpected" edit the incompatible keys a strict load checks.
RETURNS = {
    "tensor": ["none", "scale", "zero", "raise", "raise_once", "wrong_shape", "wrong_dtype", "non_tensor"],
    "node_pre": ["none", "scale", "raise", "raise_once", "wrong_len", "wrong_shape"],
    "node_post": ["none", "scale", "none_tuple", "raise", "raise_once", "wrong_len", "wrong_shape"],
    "post_acc": ["none", "self", "tensor", "raise"],
    "fwd_pre": ["none", "scale", "raise", "raise_once", "non_tensor"],
    "fwd": ["none", "scale", "raise", "raise_once", "non_tensor"],
    "bw_pre": ["none", "scale", "none_tuple", "bare", "raise", "raise_once", "wrong_len", "wrong_shape"],
    "bw": ["none", "scale", "none_tuple", "raise", "raise_once", "wrong_len", "wrong_shape", "wrong_dtype"],
    "legacy_bw": ["none", "scale", "raise", "wrong_len"],
    "g_fwd_pre": ["none", "scale", "raise_once"],
    "g_fwd": ["none", "scale", "raise_once"],
    "g_bw_pre": ["none", "scale", "raise_once", "wrong_len"],
    "g_bw": ["none", "scale", "raise_once", "wrong_len"],
    "g_legacy_bw": ["none"],
    "multi": ["none", "raise"],
    "opt_pre": ["none", "raise"],
    "opt_post": ["none"],
    "g_opt_pre": ["none"],
    "g_opt_post": ["none"],
    "sd_pre": ["none", "raise"],
    "sd_post": ["none", "drop_key"],
    "load_pre": ["none", "raise", "drop_key", "error"],
    "load_post": ["none", "clear_missing", "add_unexpected"],
    "opt_sd_pre": ["none", "raise"],
    "opt_sd_post": ["none", "drop_key", "replace"],
    "opt_load_pre": ["none", "drop_key", "replace", "raise"],
    "opt_load_post": ["none", "raise"],
}
# What a hook may do to the registries (or the grad mode) while it runs, besides the actions drawn
# in hook_step: remove its own handle twice, remove the hook registered right after it, register
# a hook of another kind (on a leaf, on the output's node, on the whole model, or a global one),
# and switch the grad mode for a computation of its own.
REGISTRY_ACTS = ["remove_self_twice", "remove_next", "register_tensor", "register_node", "register_module",
                 "register_g_bw", "register_g_fwd_pre", "grad_mode:no_grad", "grad_mode:enable_grad",
                 "grad_mode:inference_mode", "grad_mode:set_false"]
# global registration hooks (called when a module, parameter or buffer is assigned to any module)
REGISTRATION_KINDS = ["module", "parameter", "buffer"]
# hooks that run during a backward pass (where a callback may be queued for the pass's end)
BACKWARD_HOOK_KINDS = ("tensor", "post_acc", "node_pre", "node_post", "multi", "bw_pre", "bw", "legacy_bw",
                       "g_bw_pre", "g_bw")
KEY_PHRASES = [
    "inplace", "in-place", "second time", "freed", "does not require grad", "not have been used",
    "should return None", "leaf Variable", "view", "mutated", "BackwardHookFunction",
    "returned an invalid", "grad_fn", "expected", "size", "element 0", "version",
    # a replacement gradient refused: torch's wording, and the hook name its engine quotes
    "has changed the size of value", "has changed the type of value", "invalid number of grad", "hook 'hook'",
    "expected Variable", "requires_grad", "must be Tensor",
]


# --------------------------------------------------------------------------- program generator

def generate(seed: int, disabled=frozenset()) -> dict:
    """A random program for ``seed``; steps or blocks whose features are in ``disabled`` are
    redrawn (or left out), so every program of a disabled-feature run avoids them."""
    rng = random.Random(seed)
    # Features added later draw from a second stream: a seed's program keeps every step and option
    # the first stream gave it (so counts stay comparable), with the new ones added in between.
    extra = random.Random(zlib.crc32(f"extra:{seed}".encode()))
    more = random.Random(zlib.crc32(f"more:{seed}".encode()))  # the third stream, likewise
    tf = random.Random(zlib.crc32(f"tf:{seed}".encode()))  # the fourth: torch-function modes and subclasses
    around = random.Random(zlib.crc32(f"around:{seed}".encode()))  # the fifth: contexts around a pass
    labels = iter(f"h{i}" for i in range(1000))

    def allowed(features):
        return not (set(features) & set(disabled))

    blocks = []
    for i in range(rng.randint(1, 4)):
        for _ in range(20):
            kind = rng.choice(BLOCK_KINDS)
            if extra.random() < 0.12:
                kind = extra.choice(EXTRA_BLOCK_KINDS)
            if more.random() < 0.12:
                kind = more.choice(MORE_BLOCK_KINDS)
            if allowed(block_features(kind)):
                blocks.append({"kind": kind, "name": f"b{i}"})
                break
    if not blocks:
        blocks = [{"kind": "linear", "name": "b0"}]
    has_params = any(b["kind"] in BLOCK_PARAMS for b in blocks)
    x_grad = rng.random() < 0.6 or not has_params
    program = {"seed": seed, "x_requires_grad": x_grad, "model": blocks, "steps": []}
    if tf.random() < 0.08 and allowed(["x_subclass"]):
        program["x_subclass"] = True  # the input a Tensor subclass with a logging __torch_function__
    module_names = ["net"] + [("shared" if b["kind"] == "shared" else b["name"]) for b in blocks]
    module_names += [b["name"] + suffix for b in blocks for suffix in BLOCK_SUBMODULES.get(b["kind"], [])]
    params = sorted({p.format(b["name"]) for b in blocks for p in BLOCK_PARAMS.get(b["kind"], [])})
    acts = [f"a_{b['name']}" for b in blocks] + ["out"]
    for b in blocks:
        if b["kind"] == "tuple":
            acts += [f"a_{b['name']}_0", f"a_{b['name']}_1"]
    labelled = []

    def hook_step(kind, on):
        step = {"k": "hook", "kind": kind, "on": on, "label": next(labels),
                "ret": rng.choice(RETURNS[kind]) if rng.random() < 0.5 else "none"}
        r = rng.random()
        if r < 0.12:
            step["act"] = "remove_self"
        elif r < 0.22 and labelled:
            step["act"] = "remove:" + rng.choice(labelled)
        elif r < 0.32:
            step["act"] = "register"
        elif r < 0.4 and kind in ("fwd", "g_fwd"):
            step["act"] = "hook_output"
        elif r < 0.47 and kind in BACKWARD_HOOK_KINDS:
            step["act"] = "queue_callback"  # the engine's end-of-pass callback (what DDP relies on)
        elif r < 0.52 and kind in MODULE_HOOK_KINDS + GLOBAL_HOOK_KINDS:
            step["act"] = "register_global"  # a global forward hook registered from inside a hook
        elif r < 0.62 and kind == "post_acc":
            step["act"] = "opt_step"  # the per-parameter optimizer pattern: step and zero inside the hook
        if "act" not in step and rng.random() < 0.3:
            step["act"] = rng.choice(REGISTRY_ACTS)
        if kind in ("fwd_pre", "fwd", "bw_pre", "bw"):
            step["prepend"] = rng.random() < 0.3
        if kind in ("fwd_pre", "fwd"):
            step["with_kwargs"] = rng.random() < 0.3
        if kind == "fwd":
            step["always_call"] = rng.random() < 0.2
        if kind == "multi":
            step["mode"] = rng.choice(["all", "any"])
        if kind in BACKWARD_HOOK_KINDS and "act" not in step and extra.random() < 0.12:
            # only a tensor hook is handed a gradient it can differentiate again
            step["act"] = extra.choice(REENTRANT_ACTS if kind == "tensor" else REENTRANT_ACTS[:2])
        if kind in ("bw_pre", "bw") and not step.get("prepend") and extra.random() < 0.2:
            step["prepend"] = True
        if kind in OPT_SD_HOOK_KINDS:
            step["prepend"] = extra.random() < 0.3
        if "act" not in step and more.random() < 0.05:
            step["act"] = "clear_globals"  # every global hook dict emptied while a hook runs
        labelled.append(step["label"])
        return step

    def extra_step(after_forward):
        """A step of the later vocabulary, or None (most of the time)."""
        r = extra.random()
        if r < 0.1 and params:
            return {"k": "set_grad", "on": extra.choice(params), "how": extra.choice(SET_GRAD_HOW)}
        if r < 0.18 and after_forward:
            return {"k": "saved_attr", "on": extra.choice(acts), "depth": int(extra.random() < 0.3)}
        if r < 0.23 and any(s["k"] == "optimizer" for s in program["steps"]):
            if extra.random() < 0.6:
                return hook_step(extra.choice(OPT_SD_HOOK_KINDS), "opt")
            return {"k": "opt_state_dict", "load": extra.random() < 0.7}
        return None

    def more_step(after_forward):
        """A step of the third stream's vocabulary, or None."""
        what = more.choice(MORE_STEPS)
        if what == "clear_globals":
            return {"k": "clear_globals"}
        if what == "rebuild":
            return {"k": "rebuild", "on": more.choice(blocks)["name"]}
        if what in ("deepcopy", "functional_call"):
            return {"k": what}
        if what == "sched":
            if not any(s["k"] == "optimizer" for s in program["steps"]):
                return None
            return {"k": "sched", "type": more.choice(SCHEDULERS)}
        if params:
            return {"k": "requires_grad", "on": more.choice(params), "value": True}
        return None

    def draw(make, tries=12):
        for _ in range(tries):
            step = make()
            if step is not None and allowed(program_features({**program, "steps": program["steps"] + [step]})):
                program["steps"].append(step)
                return step
        return None

    def other_call(after_forward):
        """The calls besides hooks that outside programs make between passes."""
        r = rng.random()
        if r < 0.2:
            return {"k": "mode", "on": rng.choice(module_names), "train": rng.random() < 0.5}
        if r < 0.35 and params:
            return {"k": "requires_grad", "on": rng.choice(params)}
        if r < 0.5:
            step = {"k": "apply", "kind": rng.choice(["fwd", "fwd_pre", "bw"]), "label": next(labels)}
            labelled.append(step["label"])
            return step
        if r < 0.7 and labelled:
            return {"k": "remove", "label": rng.choice(labelled), "twice": rng.random() < 0.3}
        if r < 0.85 and after_forward:
            return {"k": "detach", "on": rng.choice(acts), "inplace": rng.random() < 0.5}
        if after_forward:
            return {"k": "retain_grad", "on": "out" if rng.random() < 0.6 else rng.choice(acts), "view": True}
        if rng.random() < 0.5:
            return {"k": "grow", "on": rng.choice(module_names), "what": rng.choice(REGISTRATION_KINDS)}
        return None

    def before_forward():
        if rng.random() < 0.15:
            return other_call(False)
        r = rng.random()
        if r < 0.45:
            return hook_step(rng.choice(MODULE_HOOK_KINDS), rng.choice(module_names))
        if r < 0.6:
            # legacy and full global backward hooks cannot be mixed: keep the legacy kind rare
            return hook_step(rng.choice(GLOBAL_HOOK_KINDS[:-1] * 3 + ["g_legacy_bw"]), "global")
        if r < 0.8:
            leaves = params + ["x"] * (3 if x_grad else 0)
            return hook_step(rng.choice(["tensor", "post_acc"]), rng.choice(leaves or ["x"]))
        if r < 0.9:
            return hook_step(rng.choice(SD_HOOK_KINDS), rng.choice(module_names))
        if r < 0.95:
            step = {"k": "registration_hook", "what": rng.choice(REGISTRATION_KINDS), "label": next(labels),
                    "replace": rng.random() < 0.4}
            labelled.append(step["label"])
            return step
        return {"k": "retain_grad", "on": "x"}

    def after_forward():
        if rng.random() < 0.2:
            return other_call(True)
        r = rng.random()
        if r < 0.35:
            return hook_step("tensor", rng.choice(acts))
        if r < 0.55:
            step = hook_step(rng.choice(["node_pre", "node_post"]), rng.choice(acts))
            if rng.random() < 0.3:
                step["depth"] = 1  # the node feeding the tensor's grad_fn (a view chain's inner node)
            return step
        if r < 0.65:
            return {"k": "retain_grad", "on": rng.choice(acts)}
        if r < 0.75:
            pool = acts + params + ["x"]
            return {**hook_step("multi", rng.sample(pool, min(len(pool), rng.randint(2, 3))))}
        if r < 0.85:
            return {"k": "inplace", "on": rng.choice(acts + params), "op": rng.choice(["mul_", "add_"]),
                    "no_grad": rng.random() < 0.3, "view": rng.random() < 0.3}
        return hook_step(rng.choice(MODULE_HOOK_KINDS), rng.choice(module_names))

    def backward_like():
        r = rng.random()
        if r < 0.55:
            step = {"k": "backward", "retain_graph": rng.random() < 0.4, "create_graph": rng.random() < 0.15}
            if rng.random() < 0.2:
                step["inputs"] = rng.sample(params + ["x"], rng.randint(1, min(2, len(params) + 1)))
            if rng.random() < 0.1:
                step["ctx_hook"] = rng.choice(params + ["x"])  # `with t.register_hook(h): backward`
            if rng.random() < 0.2:
                step["method"] = True  # roots[0].backward(...)
            elif rng.random() < 0.15:
                step["grad_tensors"] = True  # explicit gradients for scalar roots too
            return step
        pool = params + ["x"] + acts
        return {"k": "grad", "inputs": rng.sample(pool, rng.randint(1, min(3, len(pool)))),
                "allow_unused": rng.random() < 0.7, "retain_graph": rng.random() < 0.4,
                "create_graph": rng.random() < 0.2}

    if rng.random() < 0.4:
        draw(lambda: {"k": "optimizer", "type": rng.choice(["sgd", "adam"])})
        for _ in range(rng.randint(0, 2)):
            draw(lambda: hook_step(rng.choice(OPT_HOOK_KINDS), "opt"))
    for _round in range(rng.choice([1, 1, 2])):
        for _ in range(rng.randint(1, 5)):
            draw(before_forward)
        def forward_step():
            step = {"k": "forward", "no_grad": rng.random() < 0.05,
                    "saved": rng.choice([None] * 7 + ["log", "grad_mode", "clone", "detach", "scale"]
                                        + ["save_on_cpu", "disable", "disable_only"]
                                        + ["raise_pack", "raise_unpack", "raise_unpack_once"])}
            if rng.random() < 0.1:
                step["ctx_hook"] = rng.choice(module_names)  # `with m.register_forward_hook(h):`
            if rng.random() < 0.12:
                step["grad_ctx"] = {"block": rng.choice(blocks)["name"],
                                    "mode": rng.choice(["no_grad", "inference_mode", "enable_grad"])}
            return step
        if extra.random() < 0.3:
            draw(lambda: extra_step(False))
        if more.random() < 0.25:
            draw(lambda: more_step(False))
        draw(forward_step)
        if program["steps"] and program["steps"][-1]["k"] == "forward" and more.random() < 0.12:
            program["steps"][-1]["cached"] = True  # parametrizations computed once (parametrize.cached())
            if not allowed(program_features(program)):
                del program["steps"][-1]["cached"]
        if program["steps"] and program["steps"][-1]["k"] == "forward" and extra.random() < 0.12:
            fwd, before = program["steps"][-1], program["steps"][-1].get("saved")
            fwd["saved"] = extra.choice(EXTRA_SAVED)
            if not allowed(program_features(program)):
                fwd["saved"] = before
        for _ in range(rng.randint(0, 4)):
            draw(after_forward)
        if extra.random() < 0.35:
            draw(lambda: extra_step(True))
        if more.random() < 0.2:
            draw(lambda: more_step(True))
        draw(lambda: {"k": "roots", "how": rng.choice(["sum", "sum", "square", "two", "split", "unbind", "tuple"])})
        for _ in range(rng.choice([1, 1, 2])):
            if draw(backward_like):
                last = program["steps"][-1]
                if extra.random() < 0.1:
                    last["grad_outputs"] = extra.choice(ODD_GRAD_OUTPUTS)
                if last["k"] == "grad" and extra.random() < 0.15:
                    last["materialize_grads"] = True
                if last["k"] == "grad" and extra.random() < 0.06:
                    last["batched"] = True  # is_grads_batched
                if last["k"] == "grad" and more.random() < 0.1:
                    last["only_inputs"] = more.random() < 0.5  # deprecated, warns either way
                if tf.random() < 0.15:
                    last["tf_mode"] = True  # the pass called under a logging TorchFunctionMode
                if around.random() < 0.15:
                    # the pass inside saved_tensors_hooks: what a create_graph pass saves is packed
                    last["saved_ctx"] = around.choice(["log", "clone", "raise_pack"])
                if not allowed(program_features(program)):
                    for key in ("grad_outputs", "materialize_grads", "batched", "only_inputs", "tf_mode",
                                "saved_ctx"):
                        last.pop(key, None)
                if last.get("create_graph") and extra.random() < 0.5:
                    # a hook on a first-order gradient: it fires in the second-order pass ("double")
                    kind = extra.choice(["tensor", "node_pre", "node_post"])
                    draw(lambda: {"k": "hook", "kind": kind, "on": "g0", "label": f"hg{len(program['steps'])}",
                                  "ret": extra.choice(["none", "none", "scale"])})
                if last.get("create_graph") and rng.random() < 0.7:
                    draw(lambda: {"k": "double"})
                if extra.random() < 0.1:
                    draw(lambda: extra_step(True))
        if rng.random() < 0.5:
            draw(lambda: {"k": "step"})
        if more.random() < 0.3:
            draw(lambda: more_step(True))
        if rng.random() < 0.15:
            draw(lambda: {"k": "clip", "how": rng.choice(["norm", "norm_inf", "value"])})
        if rng.random() < 0.3:
            draw(lambda: {"k": "zero_grad", "set_to_none": rng.random() < 0.5,
                          **({"on": rng.choice(module_names)} if rng.random() < 0.3 else {})})
        if rng.random() < 0.2:
            draw(lambda: {"k": "state_dict", "load": rng.random() < 0.5,
                          "variant": rng.choice([None, None, "missing", "missing_strict", "unexpected",
                                                 "unexpected_strict", "prefix", "assign"]),
                          **({"on": rng.choice(module_names[1:] or ["net"])} if rng.random() < 0.3 else {})})
    # torch 2.13 itself crashes (segfault) when a hook is registered on a view whose base or another
    # view of its base was modified in place (h = x.softmax(1); v = h.t().t(); h.mul_(2);
    # v.register_hook(f)). Such a program would take the fuzzer down instead of testing hookgrad, so
    # with the reshape block in the model, in-place steps modify that block's own output directly.
    reshaped = [b["name"] for b in blocks if b["kind"] == "reshape"]
    if reshaped:
        for s in program["steps"]:
            if s["k"] == "inplace":
                s.update(on=f"a_{reshaped[0]}", view=False, no_grad=False)
    # The same crash with the other blocks whose output is a view (a squeeze or flatten of the
    # layer's result) and with the output made a view by retain_grad: no in-place steps on those.
    # (a block that hands back its input itself, Identity or an in-place one, passes the view on:
    # seed 200071 crashed torch through an Identity after attention's view output)
    view_outputs, aliased_view = set(), False
    for b in blocks:
        aliased_view = b["kind"] in VIEW_OUTPUT_BLOCKS or (aliased_view and b["kind"] in ALIASING_BLOCKS)
        if aliased_view:
            view_outputs.add(f"a_{b['name']}")
    if aliased_view or any(s["k"] == "retain_grad" and s.get("view") for s in program["steps"]):
        view_outputs.add("out")
    if any(s["k"] == "retain_grad" and s.get("view") and s["on"] != "out" for s in program["steps"]):
        # activations alias each other (identity blocks, in-place blocks): no in-place steps at all
        view_outputs.update(s["on"] for s in program["steps"] if s["k"] == "inplace")
    program["steps"] = [s for s in program["steps"] if not (s["k"] == "inplace" and s["on"] in view_outputs)]
    # torch 2.13 also crashes (segfault) when a hook is registered on a subclass tensor changed in place
    # under no_grad (x a LoggedTensor: out = net(x) under saved-tensor hooks; with no_grad(): out.mul_(2);
    # out.register_hook(f), seed 453): no in-place steps with the subclass input
    if program.get("x_subclass"):
        program["steps"] = [s for s in program["steps"] if s["k"] != "inplace"]
    # The same crash when an in-place block (ReLU(inplace=True)) modifies such a view under no_grad
    # (a grad-mode switch around one block) and a hook is then registered on that view.
    changed_views = {f"a_{b['name']}" for b, after in zip(blocks, blocks[1:])
                     if b["kind"] in VIEW_OUTPUT_BLOCKS + ("reshape",) and after["kind"] in ("relu_inplace", "inplace_input")}
    if changed_views and any(s["k"] == "forward" and s.get("grad_ctx") for s in program["steps"]):
        def hooks_changed_view(s):
            on = s.get("on")
            names = set(on) if isinstance(on, list) else {on}
            return (s["k"] == "retain_grad" or (s["k"] == "hook" and s["kind"] in TENSOR_HOOK_KINDS + ["multi"])) \
                and bool(names & changed_views)
        program["steps"] = [s for s in program["steps"] if not hooks_changed_view(s)]
    return program


# blocks whose output is a view of a tensor made inside them (see the end of generate)
VIEW_OUTPUT_BLOCKS = ("conv1d", "conv2d", "maxpool", "avgpool", "mha_no_weights", "transformer")
# blocks whose output is their input itself
ALIASING_BLOCKS = ("identity", "relu_inplace", "inplace_input")


def block_features(kind):
    return [f"model:{kind}"]


def step_features(step) -> list[str]:
    """The vocabulary features a step uses (what KNOWN_DIVERGENT_FEATURES can switch off)."""
    k = step["k"]
    if k == "hook":
        feats = [f"hook:{step['kind']}"]
        if step.get("ret", "none") != "none":
            feats.append(f"ret:{step['kind']}:{step['ret']}")
        act = step.get("act")
        if act:
            feats.append("act:" + act.split(":")[0])
            feats.append(f"act:{act.split(':')[0]}:{step['kind']}")
        for opt in ("prepend", "with_kwargs", "always_call"):
            if step.get(opt):
                feats.append(f"{opt}:{step['kind']}")
        if k == "hook" and step["kind"] == "multi":
            feats.append(f"multi:{step.get('mode', 'all')}")
        if step.get("depth"):
            feats.append(f"depth:{step['kind']}")
        return feats
    if k in ("backward", "grad"):
        feats = [k]
        for opt in ("retain_graph", "create_graph", "materialize_grads", "batched"):
            if step.get(opt):
                feats.append(f"{k}:{opt}")
        if step.get("grad_outputs"):
            feats.append(f"grad_outputs:{step['grad_outputs']}")
        if step.get("inputs"):
            feats.append(f"{k}:inputs")
        for opt in ("method", "grad_tensors", "ctx_hook", "tf_mode"):
            if step.get(opt):
                feats.append(f"{k}:{opt}")
        if "only_inputs" in step:
            feats.append(f"{k}:only_inputs")
        if step.get("saved_ctx"):
            feats.append(f"{k}:saved_ctx:{step['saved_ctx']}")
        return feats
    if k == "roots":
        return [f"roots:{step['how']}"]
    if k == "forward":
        return ["forward"] + ([f"saved:{step['saved']}"] if step.get("saved") else []) + \
            (["forward:no_grad"] if step.get("no_grad") else []) + \
            (["forward:ctx_hook"] if step.get("ctx_hook") else []) + \
            ([f"grad_ctx:{step['grad_ctx']['mode']}"] if step.get("grad_ctx") else []) + \
            (["forward:cached"] if step.get("cached") else [])
    if k == "inplace":
        return ["inplace"] + [f"inplace:{o}" for o in ("no_grad", "view") if step.get(o)]
    if k == "mode":
        return ["mode:" + ("train" if step["train"] else "eval")]
    if k == "apply":
        return ["apply", f"apply:{step['kind']}"]
    if k == "detach":
        return ["detach_" if step.get("inplace") else "detach"]
    if k == "retain_grad":
        return ["retain_grad"] + (["retain_grad:view"] if step.get("view") else []) + \
            (["retain_grad:view_of_activation"] if step.get("view") and step["on"] not in ("out", "x") else [])
    if k == "remove":
        return ["remove"] + (["remove:twice"] if step.get("twice") else [])
    if k == "state_dict":
        return ["state_dict"] + ([f"state_dict:{step['variant']}"] if step.get("variant") else []) + \
            (["state_dict:module"] if step.get("on") else [])
    if k == "registration_hook":
        return [f"registration_hook:{step['what']}"] + (["registration_hook:replace"] if step.get("replace") else [])
    if k == "grow":
        return [f"grow:{step['what']}"]
    if k == "clip":
        return [f"clip:{step['how']}"]
    if k == "zero_grad":
        return ["zero_grad"] + (["zero_grad:module"] if step.get("on") else [])
    if k == "set_grad":
        return ["set_grad", f"set_grad:{step['how']}"]
    if k == "saved_attr":
        return ["saved_attr"] + (["saved_attr:depth"] if step.get("depth") else [])
    if k == "opt_state_dict":
        return ["opt_state_dict"] + (["opt_state_dict:load"] if step.get("load") else [])
    if k == "optimizer":
        return [f"optimizer:{step['type']}"]
    if k == "requires_grad":
        return ["requires_grad"] + (["requires_grad:back"] if step.get("value") else [])
    if k == "sched":
        return ["sched", f"sched:{step['type']}"]
    return [k]


def program_features(program) -> set[str]:
    """Every step's features, plus combinations of steps that only diverge together."""
    feats = {"x_subclass"} if program.get("x_subclass") else set()
    for b in program["model"]:
        feats.update(block_features(b["kind"]))
    for s in program["steps"]:
        feats.update(step_features(s))
    subset_pass = "grad" in feats or "backward:inputs" in feats
    if subset_pass and feats & {"hook:node_post", "hook:legacy_bw", "hook:g_legacy_bw"}:
        feats.add("combo:post_hooks_under_input_subset")
    if not program.get("x_requires_grad") and any(
            s["k"] == "backward" and "x" in (s.get("inputs") or ()) for s in program["steps"]):
        feats.add("combo:backward_inputs_not_requiring_grad")
    multi_on = [n for s in program["steps"] if s["k"] == "hook" and s["kind"] == "multi" for n in s["on"]]
    if multi_on and (not program.get("x_requires_grad") or "forward:no_grad" in feats):
        feats.add("combo:multi_grad_hook_without_input_grad")
    if "grad" in feats and any(n == "x" or "." in n for n in multi_on):
        feats.add("combo:multi_grad_hook_on_leaf_under_autograd_grad")
    saved = {f for f in feats if f.startswith("saved:")} - {"saved:save_on_cpu", "saved:disable", "saved:disable_only"}
    for kind in ("weight_norm", "mha_no_weights"):
        if saved and f"model:{kind}" in feats:
            feats.add(f"combo:saved_hooks_on_{kind}")
    if saved and "model:embedding" in feats and feats & {"ret:fwd_pre:scale", "ret:g_fwd_pre:scale"}:
        feats.add("combo:float_indices_into_embedding_under_pack_hooks")
    create_graph_any = feats & {"backward:create_graph", "grad:create_graph"}
    for kind in ("weight_norm", "mha_no_weights"):
        if create_graph_any and f"model:{kind}" in feats:
            feats.add(f"combo:create_graph_through_{kind}")
    if saved and create_graph_any and "model:relu_inplace" in feats and feats & {
            f"model:{k}" for k in VIEW_OUTPUT_BLOCKS + ("reshape",)}:
        feats.add("combo:double_backward_through_inplace_relu_on_a_view_under_pack_hooks")
    if create_graph_any and feats & {"model:batchnorm", "model:batchnorm_eval"}:
        feats.add("combo:create_graph_through_batchnorm")
    if create_graph_any and feats & {"model:conv1d", "model:conv2d"}:
        feats.add("combo:create_graph_through_conv")
    if "act:opt_step" in feats and create_graph_any and feats & {"hook:bw", "hook:bw_pre", "hook:g_bw", "hook:g_bw_pre"}:
        feats.add("combo:optimizer_step_on_input_of_hooked_module")
    if saved and "model:kwargs" in feats:
        feats.add("combo:saved_hooks_on_linear_without_bias")
    if saved - {"saved:clone"} and "model:relu_inplace" in feats and feats & {"inplace", "inplace:view"}:
        feats.add("combo:inplace_relu_output_under_pack_hooks_then_inplace")
    if saved & {"saved:detach", "saved:scale"} and feats & {"backward:create_graph", "grad:create_graph"}:
        feats.add("combo:saved_hooks_detach_or_scale_with_create_graph")
    if multi_on and feats & {"inplace", "inplace:view", "inplace:no_grad"}:
        feats.add("combo:multi_grad_hook_then_inplace")
    if "inplace:view" in feats and sum(s["k"] in ("backward", "grad") for s in program["steps"]) > 1:
        feats.add("combo:backward_again_after_inplace_on_view")
    if "retain_grad" in feats and feats & {"inplace", "inplace:view", "inplace:no_grad"}:
        feats.add("combo:retain_grad_then_inplace")
    create_graph = feats & {"backward:create_graph", "grad:create_graph"}
    if create_graph and "model:relu" in feats:
        feats.add("combo:create_graph_through_relu")
    if create_graph and "model:layernorm" in feats:
        feats.add("combo:create_graph_through_layernorm")
    if create_graph and "zero_grad" in feats:
        feats.add("combo:zero_grad_after_create_graph")
    if any(f.startswith("act:") and f.endswith(("opt_pre", "opt_post")) for f in feats):
        feats.add("combo:optimizer_hooks_changed_during_step")
    if "ret:fwd_pre:non_tensor" in feats and feats & {"model:conv1d", "model:conv2d"}:
        feats.add("combo:non_tensor_into_conv")
    if any(st.get("saved_ctx") and st.get("create_graph") for st in program["steps"]):
        feats.add("combo:pack_hooks_around_a_create_graph_pass")
    if "x_subclass" in feats and feats & {"backward", "grad", "double", "functional_call"}:
        feats.add("combo:subclass_input_through_a_pass")
    if "x_subclass" in feats and feats & {"hook:bw", "hook:bw_pre", "hook:g_bw", "hook:g_bw_pre", "apply:bw",
                                          "act:register_module", "act:register_g_bw"}:
        feats.add("combo:subclass_input_with_full_backward_hooks")
    backward_hooks = {f"hook:{k}" for k in BACKWARD_HOOK_KINDS + ("g_legacy_bw",)}
    checkpointed = feats & {"model:checkpoint", "model:checkpoint_reentrant"}
    if "grad:batched" in feats and (feats & backward_hooks or saved or checkpointed):
        feats.add("combo:hooks_under_is_grads_batched")
    if feats & {"inplace", "inplace:no_grad", "inplace:view"} and \
            feats & {"hook:bw", "hook:bw_pre", "hook:g_bw", "hook:g_bw_pre"}:
        feats.add("combo:inplace_with_full_backward_hooks")
    return feats


# --------------------------------------------------------------------------- models

_CLASSES = {}


def _classes(T):
    """The vocabulary's module classes, defined once per framework."""
    if T.__name__ in _CLASSES:
        return _CLASSES[T.__name__]
    nn = T.nn

    class TupleOut(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH)

        def forward(self, x):
            h = self.lin(x)
            return h, h.sigmoid()

    class NestedInner(nn.Module):
        """Takes a tuple holding a list, and a dict keyword; returns a dict holding a list and a tuple."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH)

        def forward(self, pair, extra=None):
            a, (b,) = pair
            h = self.lin(a) + b * extra["scale"]
            return {"out": h, "aux": [h.tanh(), (a * 2.0,)]}

    class NestedIO(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = NestedInner()

        def forward(self, x):
            got = self.inner((x, [x * 0.5]), extra={"scale": 0.3})
            return got["out"] + got["aux"][0] + got["aux"][1][0] * 0.1

    class Twice(nn.Module):
        """One Linear called twice in a forward."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH, bias=False)

        def forward(self, x):
            return self.lin(self.lin(x).tanh())

    class Tied(nn.Module):
        """Two Linears sharing one weight Parameter."""

        def __init__(self):
            super().__init__()
            self.a = nn.Linear(WIDTH, WIDTH)
            self.b = nn.Linear(WIDTH, WIDTH)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x).sigmoid())

    class TakesKwargs(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH, bias=False)

        def forward(self, x, scale=1.0):
            return self.lin(x) * scale

    class Reshape(nn.Module):
        """Views of its input: the output's grad_fn is a view node."""

        def forward(self, x):
            return x.reshape(-1).view(x.shape).t().t()

    class SplitSwap(nn.Module):
        """One multi-output node (split) whose outputs are used apart."""

        def forward(self, x):
            left, right = x.split([1, x.shape[1] - 1], dim=1)
            return T.cat([right * 2, left], dim=1)

    class InPlaceOnInput(nn.Module):
        """Modifies its input in place (a hooked module's input is a view then)."""

        def forward(self, x):
            return x.mul_(1.5)

    class Contraction(nn.Module):
        """tensordot, inner and cdist against a (WIDTH, WIDTH) weight: permutes, reshapes, mm/dot and
        torch's CdistBackward0 under the hooks."""

        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(T.zeros(WIDTH, WIDTH, dtype=T.float64))

        def forward(self, x):
            mixed = T.tensordot(x, self.weight, dims=([1], [1])) + T.inner(x, self.weight[0]).unsqueeze(1)
            return mixed + T.cdist(x, self.weight, p=1.0) * 0.1

    class Conv1dBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(1, 1, 3, padding=1)

        def forward(self, x):
            return self.conv(x.unsqueeze(1)).squeeze(1)

    class Conv2dBlock(nn.Module):
        """The rows reshaped to one-channel images of height 1."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, (1, 3), padding=(0, 1))

        def forward(self, x):
            return self.conv(x.reshape(x.shape[0], 1, 1, x.shape[1])).sum(dim=1).flatten(1)

    class EmbeddingAdd(nn.Module):
        """An integer input path: a fixed index per row, looked up and added."""

        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, WIDTH)

        def forward(self, x):
            return x + self.emb(T.tensor([1, 3][:x.shape[0]] + [0] * max(0, x.shape[0] - 2)))

    class Pool(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.pool = (nn.MaxPool1d if kind == "max" else nn.AvgPool1d)(3, stride=1, padding=1)

        def forward(self, x):
            return self.pool(x.unsqueeze(1)).squeeze(1)

    class Attention(nn.Module):
        """Self-attention over the rows (one sequence); the attention module's output is a tuple."""

        def __init__(self, need_weights):
            super().__init__()
            self.need_weights = need_weights
            self.attn = nn.MultiheadAttention(WIDTH, 1, batch_first=True)

        def forward(self, x):
            seq = x.unsqueeze(0)
            out, weights = self.attn(seq, seq, seq, need_weights=self.need_weights)
            out = out.squeeze(0)
            return out + weights.squeeze(0).sum(1, keepdim=True) if weights is not None else out

    class Recurrent(nn.Module):
        """An LSTM or GRU over the rows (one sequence) from a given initial state; tuple outputs."""

        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(WIDTH, WIDTH, batch_first=True)

        def forward(self, x):
            h0 = T.full((1, 1, WIDTH), 0.1, dtype=x.dtype)
            state = (h0, T.full((1, 1, WIDTH), -0.2, dtype=x.dtype)) if self.kind == "lstm" else h0
            out, state = self.rnn(x.unsqueeze(0), state)
            last = state[0] if self.kind == "lstm" else state
            return out.squeeze(0) + last.reshape(1, WIDTH)

    class Checkpointed(nn.Module):
        def __init__(self, reentrant):
            super().__init__()
            self.reentrant = reentrant
            self.inner = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh())

        def forward(self, x):
            checkpoint = importlib.import_module(T.__name__ + ".utils.checkpoint").checkpoint
            return checkpoint(self.inner, x, use_reentrant=self.reentrant)

    class ListBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(WIDTH, WIDTH), nn.ReLU()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class DictBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleDict({"lin": nn.Linear(WIDTH, WIDTH), "act": nn.Sigmoid()})

        def forward(self, x):
            return self.layers["act"](self.layers["lin"](x))

    class Symmetric(nn.Module):
        def forward(self, weight):
            return weight.triu() + weight.triu(1).transpose(0, 1)

    class DictInner(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH, bias=False)

        def forward(self, x):
            h = self.lin(x)
            return {"y": h, "gate": h.sigmoid()}

    @dataclasses.dataclass
    class Pair:
        main: object
        aux: object

    class PairInner(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH)

        def forward(self, x):
            h = self.lin(x)
            return Pair(h, h.tanh())

    class Unwrap(nn.Module):
        """Calls a submodule returning a dict or a dataclass (full backward hooks on it only warn)."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            got = self.inner(x)
            if isinstance(got, dict):
                return got["y"] * got["gate"]
            return got.main + got.aux * 0.5

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(WIDTH, 1, dim_feedforward=4, dropout=0.0, batch_first=True)

        def forward(self, x):
            return self.layer(x.unsqueeze(0)).squeeze(0)

    class BilinearSelf(nn.Module):
        """One tensor given twice: a full backward hook's grad_input has two entries for it."""

        def __init__(self):
            super().__init__()
            self.bil = nn.Bilinear(WIDTH, WIDTH, WIDTH)

        def forward(self, x):
            return self.bil(x, x)

    class RaiseOnce(nn.Module):
        """Its first forward raises after its Linear ran; later ones pass."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(WIDTH, WIDTH, bias=False)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            h = self.lin(x)
            if self.calls == 1:
                raise ValueError("the first forward is refused")
            return h

    def spectral_normed():
        T.manual_seed(7)  # the power iteration's starting vectors are random
        # (in float64: a float32 power iteration rounds differently in each framework's kernels)
        return nn.utils.parametrizations.spectral_norm(nn.Linear(WIDTH, WIDTH).double())

    def parametrized(kind):
        lin = nn.Linear(WIDTH, WIDTH)
        if kind == "weight_norm":
            return nn.utils.parametrizations.weight_norm(lin)
        nn.utils.parametrize.register_parametrization(lin, "weight", Symmetric())
        return lin

    Function = T.autograd.Function
    once_differentiable = importlib.import_module(T.__name__ + ".autograd.function").once_differentiable

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * 3 * x * x

    class DoubleInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class TanhOnce(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.tanh()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * (1 - y * y)

    class ScaleWithSign(Function):
        """Two outputs, the second (the input's sign) marked non-differentiable."""

        @staticmethod
        def forward(ctx, x):
            sign = x.sign()
            ctx.mark_non_differentiable(sign)
            return x * 2, sign

        @staticmethod
        def backward(ctx, grad, grad_sign):
            return grad * 2 + grad_sign  # the sign's gradient is materialized: zeros

    class TwoScales(Function):
        """Two outputs of which the block uses one; gradients are not materialized, so the unused
        output's gradient is None (a zero tensor there would be hookgrad materializing it)."""

        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, grad_first, grad_second):
            if grad_second is not None:
                raise RuntimeError("the unused output got a materialized gradient")
            return None if grad_first is None else grad_first * 2

    class FunctionBlock(nn.Module):
        def __init__(self, fn, copy_input=False):
            super().__init__()
            self.fn, self.copy_input = fn, copy_input

        def forward(self, x):
            # the in-place function gets a fresh non-leaf, as a real layer would
            out = self.fn.apply(x * 1.0 if self.copy_input else x)
            if isinstance(out, tuple):
                return out[0] + out[1] * 0.25 if self.fn is ScaleWithSign else out[0]
            return out

    def batchnorm(eval_mode):
        bn = nn.BatchNorm1d(WIDTH, momentum=0.3)
        with T.no_grad():
            bn.running_mean.fill_(0.25)
            bn.running_var.fill_(1.5)
        return bn.eval() if eval_mode else bn

    class Net(nn.Module):
        def __init__(self, blocks):
            super().__init__()
            self.blocks = [dict(b) for b in blocks]
            makers = {"nested_io": NestedIO, "twice": Twice, "tied": Tied, "linear": lambda: nn.Linear(WIDTH, WIDTH), "relu": nn.ReLU, "tanh": nn.Tanh,
                      "sigmoid": nn.Sigmoid, "tuple": TupleOut, "kwargs": TakesKwargs,
                      "seq": lambda: nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh()),
                      "relu_inplace": lambda: nn.ReLU(inplace=True), "reshape": Reshape, "split": SplitSwap,
                      "layernorm": lambda: nn.LayerNorm(WIDTH), "softmax": lambda: nn.Softmax(dim=1),
                      "inplace_input": InPlaceOnInput,
                      "conv1d": Conv1dBlock, "conv2d": Conv2dBlock, "batchnorm": lambda: batchnorm(False),
                      "batchnorm_eval": lambda: batchnorm(True), "dropout": lambda: nn.Dropout(0.5),
                      "embedding": EmbeddingAdd, "gelu": nn.GELU, "silu": nn.SiLU, "elu": lambda: nn.ELU(0.7),
                      "leaky_relu": lambda: nn.LeakyReLU(0.2), "softplus": lambda: nn.Softplus(beta=2.0),
                      "hardtanh": lambda: nn.Hardtanh(-0.5, 0.5), "maxpool": lambda: Pool("max"),
                      "avgpool": lambda: Pool("avg"), "mha": lambda: Attention(True),
                      "mha_no_weights": lambda: Attention(False), "lstm": lambda: Recurrent("lstm"),
                      "gru": lambda: Recurrent("gru"), "checkpoint": lambda: Checkpointed(False),
                      "checkpoint_reentrant": lambda: Checkpointed(True), "identity": nn.Identity,
                      "modulelist": ListBlock, "moduledict": DictBlock,
                      "weight_norm": lambda: parametrized("weight_norm"),
                      "parametrize": lambda: parametrized("symmetric"), "function": lambda: FunctionBlock(Cube),
                      "function_dirty": lambda: FunctionBlock(DoubleInPlace, copy_input=True),
                      "function_once": lambda: FunctionBlock(TanhOnce), "contraction": Contraction,
                      "function_nondiff": lambda: FunctionBlock(ScaleWithSign),
                      "function_no_materialize": lambda: FunctionBlock(TwoScales),
                      "groupnorm": lambda: nn.GroupNorm(1, WIDTH), "spectral_norm": spectral_normed,
                      "dict_out": lambda: Unwrap(DictInner()), "dataclass_out": lambda: Unwrap(PairInner()),
                      "transformer": Encoder, "bilinear": BilinearSelf, "prelu": lambda: nn.PReLU(WIDTH),
                      "raise_once": RaiseOnce}
            self.makers = makers
            for b in self.blocks:
                if b["kind"] == "shared":
                    if not hasattr(self, "shared"):
                        self.shared = nn.Linear(WIDTH, WIDTH)
                else:
                    setattr(self, b["name"], makers[b["kind"]]())
            self.acts = {}
            self.block_grad_mode = {}  # block name -> a context manager factory around its call

        def rebuild(self, name):
            """A fresh module in place of block ``name``: (its attribute name, the module)."""
            kind = next((b["kind"] for b in self.blocks if b["name"] == name), None)
            if kind is None:
                raise Skip(name)
            attr = "shared" if kind == "shared" else name
            setattr(self, attr, (self.makers["linear"] if kind == "shared" else self.makers[kind])().double())
            return attr, getattr(self, attr)

        def forward(self, x):
            h = x
            for b in self.blocks:
                grad_mode = self.block_grad_mode.get(b["name"])
                with grad_mode() if grad_mode else contextlib.nullcontext():
                    h = self.call_block(b, h)
                self.acts[f"a_{b['name']}"] = h
            return h

        def call_block(self, b, h):
            if b["kind"] == "shared":
                h = self.shared(h)
            elif b["kind"] == "kwargs":
                h = getattr(self, b["name"])(h, scale=0.5)
            else:
                h = getattr(self, b["name"])(h)
            if b["kind"] == "tuple" and isinstance(h, tuple) and len(h) == 2:
                self.acts[f"a_{b['name']}_0"], self.acts[f"a_{b['name']}_1"] = h
                h = h[0] + h[1]
            elif isinstance(h, (tuple, list)):
                h = h[0]
            return h

    _CLASSES[T.__name__] = Net
    return Net


_TF_CLASSES = {}


def _torch_function_classes(T, interp):
    """(a TorchFunctionMode, a Tensor subclass), each logging the name of every function that
    reaches its ``__torch_function__`` into ``interp`` (the one running now) and running it."""
    if T.__name__ not in _TF_CLASSES:
        sink = {}

        class LoggingMode(T.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                sink["interp"].torch_function_called("mode", func)
                return func(*args, **(kwargs or {}))

        class LoggedTensor(T.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                sink["interp"].torch_function_called("subclass", func)
                return super().__torch_function__(func, types, args, kwargs)
        _TF_CLASSES[T.__name__] = sink, LoggingMode, LoggedTensor
    sink, mode, subclass = _TF_CLASSES[T.__name__]
    sink["interp"] = interp
    return mode, subclass


def _values(seed, name, n):
    rng = random.Random(zlib.crc32(f"{seed}:{name}".encode()))
    return [round(rng.uniform(-1, 1), 2) for _ in range(n)]


# --------------------------------------------------------------------------- interpreter

class FuzzTimeout(Exception):
    pass


class HookFailed(ValueError):
    """What a hook with ret='raise' raises: it must reach the caller unchanged."""


class Skip(Exception):
    """A step refers to something the (shrunk) program does not have: same on both frameworks."""


def summary(T, x):
    """What a log keeps of a value: plain data that means the same on both frameworks."""
    if isinstance(x, T.Tensor):
        vals = [float(v) for v in x.detach().reshape(-1).tolist()]
        kept = ("T", str(x.dtype).split(".")[-1], tuple(x.shape), vals, bool(x.requires_grad))
        return kept + ("LoggedTensor",) if type(x).__name__ == "LoggedTensor" else kept
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, (tuple, list)):
        return tuple(summary(T, v) for v in x)
    if isinstance(x, dict):
        return ("dict", tuple(sorted((str(k), summary(T, v)) for k, v in x.items())))
    if isinstance(x, T.nn.Module):
        return ("module", type(x).__name__)
    return ("obj", type(x).__name__)


def exception_record(exc):
    msg = str(exc)
    return ("raised", type(exc).__name__, tuple(p for p in KEY_PHRASES if p in msg)), msg


class Interpreter:
    def __init__(self, T, program):
        self.T = T
        self.program = program
        self.log = []
        self.messages = []  # full exception texts, for the reader (not compared)
        self.env = {}
        self.handles = {}
        self.global_handles = []
        self.retained = []
        self.roots = None
        self.grads = None
        self.opt = None
        self.saved_state = None
        self.sched = None
        self.dropped = []  # modules a step replaced, kept alive (what a reference cycle may do in torch)
        self.param_opts = {}  # post-accumulate-grad hook label -> that parameter's own optimizer
        self.unpack_raised = False
        self.tf_logging = False  # inside a pass: torch-function calls (mode or subclass) are logged
        self.quiet = 0  # the fuzzer's own summaries are not logged
        self.mm = importlib.import_module(T.__name__ + ".nn.modules.module")
        self.optmod = importlib.import_module(T.__name__ + ".optim.optimizer")

    # ---- helpers
    def event(self, *what):
        self.log.append(what)

    def S(self, x):
        self.quiet += 1
        try:
            return summary(self.T, x)
        finally:
            self.quiet -= 1

    def torch_function_called(self, source, func):
        if self.tf_logging and not self.quiet:
            self.event("tf", source, getattr(func, "__name__", type(func).__name__))

    def tensor(self, name):
        if name == "x":
            return self.x
        if name in self.env:
            return self.env[name]
        params = dict(self.net.named_parameters())
        if name in params:
            return params[name]
        raise Skip(name)

    def module(self, name):
        if name == "net":
            return self.net
        try:
            return self.net.get_submodule(name)
        except AttributeError:
            raise Skip(name) from None

    def module_name(self, mod):
        for name, m in self.net.named_modules():
            if m is mod:
                return name or "net"
        return type(mod).__name__

    def scale(self, x, factor):
        if isinstance(x, self.T.Tensor):
            return x * factor
        if isinstance(x, dict):
            return {k: self.scale(v, factor) for k, v in x.items()}
        if isinstance(x, (tuple, list)):
            return type(x)(self.scale(v, factor) for v in x)
        return x

    # ---- program
    def run(self):
        T = self.T
        Net = _classes(T)
        seed = self.program["seed"]
        # the kind of the first global backward hook (full or legacy) stays decided for the whole
        # process, even after its removal; every program starts undecided
        self.mm._global_is_full_backward_hook = None
        self.net = Net(self.program["model"]).double()
        with T.no_grad():
            for name, p in self.net.named_parameters():
                p.copy_(T.tensor(_values(seed, name, p.numel()), dtype=T.float64).reshape(p.shape))
        self.x = T.tensor(_values(seed, "x", BATCH * WIDTH), dtype=T.float64).reshape(BATCH, WIDTH)
        if self.program.get("x_subclass"):
            self.x = self.x.as_subclass(_torch_function_classes(T, self)[1])
        T.manual_seed(seed)  # dropout draws from the generator: both frameworks' streams must agree
        if self.program.get("x_requires_grad"):
            self.x.requires_grad_(True)
        try:
            for step in self.program["steps"]:
                self.run_step(step)
            self.final()
        finally:
            for h in self.global_handles:
                h.remove()
        return self.log

    def run_step(self, step):
        self.event("step", step["k"] + (":" + step["kind"] if step["k"] == "hook" else ""))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = getattr(self, "do_" + step["k"])(step)
            except Skip:
                self.event("skipped")
                return
            except FuzzTimeout:
                raise
            except Exception as exc:  # noqa: BLE001 - the exception class is what we compare
                record, msg = exception_record(exc)
                self.event(*record)
                self.messages.append(f"{type(exc).__name__}: {msg}")
                result = None
            else:
                self.event("ok", self.S(result))
        # a hook that raised inside a grad-mode switch must not leave the switch on
        T = self.T
        if not T.is_grad_enabled() or T.is_inference_mode_enabled():
            self.event("mode_left", T.is_grad_enabled(), T.is_inference_mode_enabled())
            T.set_grad_enabled(True)
        # torch gives the create_graph warnings once per process, so they depend on what ran before
        cats = sorted({w.category.__name__ for w in caught if "create_graph=True" not in str(w.message)}
                      - {"DeprecationWarning"})
        if cats:
            self.event("warn", tuple(cats))
            self.messages += [f"{w.category.__name__}: {w.message}" for w in caught]

    def final(self):
        T = self.T
        grads = {"x": self.S(self.x.grad)}
        for name, p in self.net.named_parameters():
            grads[name] = self.S(p.grad)
            self.event("param", name, self.S(p.detach()))
        for name, b in self.net.named_buffers():
            self.event("buffer", name, self.S(b))
        for name, t in self.retained:
            grads[name] = self.S(t.grad)
        self.event("grads", tuple(sorted(grads.items())))
        self.event("registries", *self.registries())

    def registries(self):
        """How many hooks of each kind every module, the globals and the tensors hold at the end
        (what a raising hook or a removal during a pass may leave behind)."""
        def count(d):
            return len(d) if d is not None else 0
        modules = tuple((self.module_name(m), tuple(count(getattr(m, a, None)) for a in MODULE_REGISTRIES),
                         getattr(m, "_is_full_backward_hook", None)) for _, m in self.net.named_modules())
        globals_ = tuple(count(getattr(self.mm, "_global_" + a)) for a in GLOBAL_REGISTRIES)
        tensors = [("x", self.x)] + list(self.net.named_parameters()) + sorted(
            (n, t) for n, t in self.env.items() if isinstance(t, self.T.Tensor))
        optimizer = () if self.opt is None else tuple(count(getattr(self.opt, a, None)) for a in OPTIMIZER_REGISTRIES)
        return modules, globals_, tuple((n, count(getattr(t, "_backward_hooks", None))) for n, t in tensors), optimizer

    # ---- steps
    def do_forward(self, step):
        T = self.T
        ctx = contextlib.ExitStack()
        with ctx:
            if step.get("no_grad"):
                ctx.enter_context(T.no_grad())
            saved = step.get("saved")
            if saved in ("disable", "disable_only"):
                ctx.enter_context(T.autograd.graph.disable_saved_tensors_hooks("saved-tensor hooks are off here"))
            if saved == "save_on_cpu":
                ctx.enter_context(T.autograd.graph.save_on_cpu())
            elif saved == "nested":  # the inner pair is the one that runs
                ctx.enter_context(T.autograd.graph.saved_tensors_hooks(*self.saved_hooks("outer")))
                ctx.enter_context(T.autograd.graph.saved_tensors_hooks(*self.saved_hooks("log")))
            elif saved and saved != "disable_only":
                ctx.enter_context(T.autograd.graph.saved_tensors_hooks(*self.saved_hooks(saved)))
            if step.get("cached"):
                ctx.enter_context(T.nn.utils.parametrize.cached())
            grad_ctx = step.get("grad_ctx")
            self.net.block_grad_mode = {}
            if grad_ctx:
                mode = grad_ctx["mode"]
                if mode == "enable_grad":  # the rest of the forward under no_grad
                    ctx.enter_context(T.no_grad())
                self.net.block_grad_mode[grad_ctx["block"]] = getattr(T, mode)
            if step.get("ctx_hook"):
                name = self.module_name
                ctx.enter_context(self.module(step["ctx_hook"]).register_forward_hook(
                    lambda m, args, out: self.event("hook", "ctx", "fwd", name(m), self.S(out))))
            self.net.acts = {}
            out = self.net(self.x)
        self.env.update(self.net.acts)
        self.env["out"] = out
        return out

    def saved_hooks(self, mode):
        def pack(t):
            if mode == "raise_pack":
                raise HookFailed("pack")
            if mode == "grad_mode":
                self.event("pack", self.S(t)[:3], "grad enabled", bool(self.T.is_grad_enabled()))
            elif mode == "outer":
                self.event("pack", self.S(t)[:3], "outer")
            else:
                self.event("pack", self.S(t)[:3])
            if mode == "non_tensor":
                return ("boxed", t)
            return {"clone": t.clone, "detach": t.detach, "scale": lambda: t * 2.0}.get(mode, lambda: t)()

        def unpack(t):
            if mode == "non_tensor":
                t = t[1]
            self.event("unpack", self.S(t)[:3])
            if mode == "raise_unpack" or (mode == "raise_unpack_once" and not self.unpack_raised):
                self.unpack_raised = True
                raise HookFailed("unpack")
            if mode == "unpack_non_tensor":
                return 1.5
            if mode == "unpack_float32":
                return t.float()
            if mode == "unpack_flat":
                return t.reshape(-1)
            return t / 2.0 if mode == "scale" else t
        return pack, unpack

    def do_roots(self, step):
        T = self.T
        out = self.env.get("out")
        if out is None:
            raise Skip("out")
        how = step["how"]
        if how == "sum":
            roots, grads = [out.sum()], None
        elif how == "square":
            roots, grads = [(out * out).mean()], None
        elif how == "two":
            roots, grads = [out.sum(), (out * out).sum()], None
        elif how in ("split", "unbind"):
            roots = list(out.split(1) if how == "split" else T.unbind(out))
            grads = [T.full_like(r, float(i + 1)) for i, r in enumerate(roots)]
        else:
            names = [n for n in self.env if n.endswith("_0")]
            if not names:
                raise Skip("tuple")
            a, b = self.env[names[0]], self.env[names[0][:-1] + "1"]
            roots, grads = [a, b], [T.ones_like(a), T.full_like(b, 2.0)]
        self.roots, self.grads = roots, grads
        return len(roots)

    def do_backward(self, step):
        T = self.T
        if self.roots is None:
            raise Skip("roots")
        kwargs = {}
        if step.get("inputs"):
            kwargs["inputs"] = [self.tensor(n) for n in step["inputs"]]
        grads = self.grads
        if step.get("grad_tensors"):
            grads = [T.full_like(r, 1.5 + i) for i, r in enumerate(self.roots)]
        if step.get("grad_outputs"):
            grads = self.odd_grads(step["grad_outputs"])
        options = dict(retain_graph=step.get("retain_graph", False), create_graph=step.get("create_graph", False))
        with self.pass_context(step) as ctx:
            if step.get("ctx_hook"):
                ctx.enter_context(self.tensor(step["ctx_hook"]).register_hook(
                    lambda g: self.event("hook", "ctx", "tensor", self.S(g))))
            if step.get("method"):
                self.roots[0].backward(grads[0] if grads else None, **options, **kwargs)
            else:
                T.autograd.backward(self.roots, grads, **options, **kwargs)
        self.note_first_order([t.grad for t in [self.x] + list(self.net.parameters())])

    @contextlib.contextmanager
    def pass_context(self, step):
        """Around a backward pass: torch-function calls logged (a subclass input's, and with
        ``tf_mode`` a logging TorchFunctionMode's, which is entered around the call)."""
        with contextlib.ExitStack() as ctx:
            before = self.tf_logging
            self.tf_logging = bool(step.get("tf_mode") or self.program.get("x_subclass"))
            ctx.callback(setattr, self, "tf_logging", before)
            if step.get("tf_mode"):
                ctx.enter_context(_torch_function_classes(self.T, self)[0]())
            if step.get("saved_ctx"):
                ctx.enter_context(self.T.autograd.graph.saved_tensors_hooks(*self.saved_hooks(step["saved_ctx"])))
            yield ctx

    def note_first_order(self, grads):
        """The first gradient that is part of a graph (create_graph=True) becomes ``g0``: hooks on it
        fire in a second-order pass."""
        first = next((g for g in grads if isinstance(g, self.T.Tensor) and g.requires_grad), None)
        if first is not None:
            self.env["g0"] = first

    def do_grad(self, step):
        if self.roots is None:
            raise Skip("roots")
        T = self.T
        inputs = [self.tensor(n) for n in step["inputs"]]
        grads = self.odd_grads(step["grad_outputs"]) if step.get("grad_outputs") else self.grads
        kwargs = {}
        if step.get("materialize_grads"):
            kwargs["materialize_grads"] = True
        if "only_inputs" in step:
            kwargs["only_inputs"] = step["only_inputs"]
        if step.get("batched"):  # two gradients per root, stacked along a new first dimension
            grads = [T.stack([g, g * -0.5]) if isinstance(g, T.Tensor) else
                     T.stack([T.ones_like(r), T.full_like(r, -0.5)]) if g is None else g
                     for r, g in zip(self.roots, grads or [None] * len(self.roots))]
            kwargs["is_grads_batched"] = True
        with self.pass_context(step):
            got = T.autograd.grad(self.roots, inputs, grads, retain_graph=step.get("retain_graph", False),
                                  create_graph=step.get("create_graph", False),
                                  allow_unused=step.get("allow_unused", False), **kwargs)
        self.env["last_grads"] = got
        self.note_first_order(got)
        return got

    def odd_grads(self, how):
        """Gradients for the roots that are not the usual ones: another dtype, shape, integers, None."""
        T = self.T
        if how == "none":
            return [None for _ in self.roots]
        make = {"float32": lambda r, i: T.full(tuple(r.shape), float(i + 1), dtype=T.float32),
                "wrong_shape": lambda r, i: T.full((2,) + tuple(r.shape), float(i + 1), dtype=r.dtype),
                "int": lambda r, i: T.full(tuple(r.shape), i + 1, dtype=T.int64)}[how]
        return [make(r, i) for i, r in enumerate(self.roots)]

    def do_set_grad(self, step):
        """``.grad`` set or deleted by hand."""
        T, how = self.T, step["how"]
        p = self.tensor(step["on"])
        if how == "none":
            p.grad = None
        elif how == "del":
            del p.grad
        elif how in ("zeros", "ones"):
            p.grad = getattr(T, how + "_like")(p)
        elif how == "wrong_shape":
            p.grad = T.zeros(p.numel() + 1, dtype=p.dtype)
        elif how == "wrong_dtype":
            p.grad = T.zeros_like(p, dtype=T.float32)
        else:
            p.grad = T.ones_like(p).requires_grad_()
        return p.grad

    def do_saved_attr(self, step):
        """Every ``_saved_*`` attribute of a tensor's grad_fn (or of the node feeding it), each read
        (a freed graph raises)."""
        fn = self.tensor(step["on"]).grad_fn
        if fn is not None and step.get("depth"):
            fn = next((f for f, _ in fn.next_functions if f is not None), None)
        if fn is None:
            raise Skip("no grad_fn")
        values = []
        for name in sorted(n for n in dir(fn) if n.startswith("_saved_")):
            try:
                values.append((name, self.S(getattr(fn, name))))
            except Exception as exc:  # noqa: BLE001 - the class and key phrases are compared
                values.append((name,) + exception_record(exc)[0])
        return fn.name(), tuple(values)

    def do_opt_state_dict(self, step):
        """The optimizer's state dict (its hooks run), maybe loaded back."""
        if self.opt is None:
            raise Skip("optimizer")
        sd = self.opt.state_dict()
        shape = (tuple(sorted(sd)), tuple(sorted(sd.get("state", {}))),
                 tuple(sorted(k for g in sd.get("param_groups", []) for k in g)))
        if step.get("load"):
            self.opt.load_state_dict(sd)
            return shape, self.opt.param_groups[0]["lr"], len(self.opt.state)
        return shape

    def do_double(self, step):
        T = self.T
        grads = self.env.get("last_grads")
        if grads is None:
            params = [self.x] + list(self.net.parameters())
            grads = [p.grad for p in params]
        terms = [(g * g).sum() for g in grads if isinstance(g, T.Tensor) and g.requires_grad]
        if not terms:
            raise Skip("no differentiable grads")
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        with self.pass_context(step):
            total.backward()

    def do_retain_grad(self, step):
        t = self.tensor(step["on"])
        if step.get("view"):  # the roots are then computed from a view of the output
            t = t.view(t.shape)
            self.env[step["on"]] = t
        t.retain_grad()
        if not t.is_leaf:
            self.retained.append((step["on"], t))

    def do_inplace(self, step):
        T = self.T
        t = self.tensor(step["on"])
        with (T.no_grad() if step.get("no_grad") else contextlib.nullcontext()):
            target = t.view(-1) if step.get("view") else t
            getattr(target, step["op"])(2.0 if step["op"] == "mul_" else 1.0)
        return t

    def do_optimizer(self, step):
        T = self.T
        params = list(self.net.parameters())
        if not params:
            raise Skip("no parameters")
        self.opt = T.optim.SGD(params, lr=0.1, momentum=0.5) if step["type"] == "sgd" else T.optim.Adam(params, lr=0.01, eps=ADAM_EPS)

    def do_step(self, step):
        if self.opt is None:
            raise Skip("optimizer")
        self.opt.step()

    def do_zero_grad(self, step):
        if step.get("on"):
            self.module(step["on"]).zero_grad(set_to_none=step["set_to_none"])
        elif self.opt is not None:
            self.opt.zero_grad(set_to_none=step["set_to_none"])
        else:
            self.net.zero_grad(set_to_none=step["set_to_none"])

    def do_state_dict(self, step):
        """A state dict (of the model or of one module, with or without a prefix), then maybe
        loaded back shifted: missing or unexpected keys, strict or not, or assigned."""
        mod = self.module(step["on"]) if step.get("on") else self.net
        variant = step.get("variant")
        prefix = "p." if variant == "prefix" else ""
        sd = mod.state_dict(prefix=prefix)
        keys = tuple(sd)
        if step.get("load"):
            shifted = {k[len(prefix):]: v.detach() + 0.5 for k, v in sd.items()}
            if variant in ("missing", "missing_strict") and shifted:
                shifted.pop(next(iter(shifted)))
            if variant in ("unexpected", "unexpected_strict"):
                shifted["unexpected.weight"] = self.T.zeros(1, dtype=self.T.float64)
            result = mod.load_state_dict(shifted, strict=variant not in ("missing", "unexpected"),
                                         assign=variant == "assign")
            return keys, tuple(result.missing_keys), tuple(result.unexpected_keys)
        return keys

    def do_registration_hook(self, step):
        """A global hook called when a module, parameter or buffer is assigned to a module; with
        "replace" it returns what is registered instead."""
        T, what, label = self.T, step["what"], step["label"]

        def hook(module, name, value):
            # a fresh layer registers its parameters before it initializes them: torch's then hold
            # whatever memory they were given, so only their kind is compared
            self.event("hook", label, "registration_" + what, type(module).__name__, name,
                       self.S(value)[:3] if isinstance(value, T.Tensor) else self.S(value))
            if not step.get("replace") or value is None:
                return None
            if what == "module":
                return T.nn.Tanh()
            doubled = value.detach() * 2.0
            return T.nn.Parameter(doubled) if what == "parameter" else doubled
        handle = getattr(self.mm, f"register_module_{what}_registration_hook")(hook)
        self.global_handles.append(handle)
        self.handles[label] = handle

    def do_grow(self, step):
        """Assigns a new parameter, buffer or submodule to a module (registration hooks fire)."""
        T, mod = self.T, self.module(step["on"])
        if step["what"] == "parameter":
            mod.register_parameter("grown", T.nn.Parameter(T.full((2,), 0.5, dtype=T.float64)))
        elif step["what"] == "buffer":
            mod.register_buffer("grown_buffer", T.full((2,), -0.5, dtype=T.float64))
        else:
            mod.add_module("grown_module", T.nn.Identity())
        return type(getattr(mod, {"parameter": "grown", "buffer": "grown_buffer"}.get(step["what"], "grown_module"))).__name__

    def do_mode(self, step):
        mod = self.module(step["on"])
        return mod.train(step["train"]).training

    def do_requires_grad(self, step):
        self.tensor(step["on"]).requires_grad_(bool(step.get("value", False)))

    def do_clear_globals(self, step=None):
        """Empties every global hook dict by hand (what test fixtures do between tests); the
        handles of the hooks that were there stay, and removing them later does nothing."""
        for name in GLOBAL_REGISTRIES:
            getattr(self.mm, "_global_" + name).clear()

    def do_rebuild(self, step):
        """Replaces a block by a fresh one (module registration hooks fire); the old module, its
        hooks and their handles are left to the program."""
        self.dropped.append(getattr(self.net, "shared" if step["on"] == "shared" else step["on"], None))
        attr, module = self.net.rebuild(step["on"])
        with self.T.no_grad():
            for name, p in module.named_parameters():
                p.copy_(self.T.tensor(_values(self.program["seed"], f"rebuilt.{attr}.{name}", p.numel()),
                                      dtype=self.T.float64).reshape(p.shape))
        self.T.manual_seed(self.program["seed"] + 1)  # the fresh layer's initialization drew from the generator
        return type(module).__name__, tuple(n for n, _ in module.named_parameters())

    def do_deepcopy(self, step):
        """The program goes on with a deep copy of the model: its module hooks are copied along
        (the same functions), the handles still point at the original's registries."""
        self.net.acts = {}
        # the original is kept alive: torch's deep copy of a parametrized module keeps it alive
        # anyway (the copy shares its class, whose property closure holds it), hookgrad's does not,
        # and a legacy backward hook of a dead module raises (see fuzz-divergences.md, seed 948)
        self.dropped.append(self.net)
        self.net = copy.deepcopy(self.net)
        return tuple((self.module_name(m), tuple(len(getattr(m, a)) for a in MODULE_REGISTRIES))
                     for _, m in self.net.named_modules())

    def do_functional_call(self, step):
        """A forward and backward through torch.func.functional_call with every parameter scaled
        (a graph from the scaled tensors back to the parameters: their hooks fire)."""
        T = self.T
        params = {name: p * 1.5 for name, p in self.net.named_parameters()}
        out = T.func.functional_call(self.net, params, (self.x,))
        if isinstance(out, T.Tensor) and out.requires_grad:
            out.sum().backward()
        return out

    def do_sched(self, step):
        """An lr scheduler made on the optimizer at its first use, stepped at each later one
        (stepping before opt.step() warns)."""
        if self.opt is None:
            raise Skip("optimizer")
        if self.sched is None:
            lrs = self.T.optim.lr_scheduler
            self.sched = {"step": lambda: lrs.StepLR(self.opt, step_size=1, gamma=0.5),
                          "exponential": lambda: lrs.ExponentialLR(self.opt, 0.9),
                          "lambda": lambda: lrs.LambdaLR(self.opt, lambda epoch: 1.0 / (epoch + 1))}[step["type"]]()
            return "made", tuple(self.sched.get_last_lr())
        self.sched.step()
        return tuple(self.sched.get_last_lr()), tuple(sorted(self.opt.param_groups[0]))

    def do_detach(self, step):
        t = self.tensor(step["on"])
        if step.get("inplace"):
            return t.detach_()
        self.env[step["on"]] = t.detach()
        return self.env[step["on"]]

    def do_clip(self, step):
        T = self.T
        params = list(self.net.parameters())
        if step["how"] == "value":
            return T.nn.utils.clip_grad_value_(params, 0.1)
        return T.nn.utils.clip_grad_norm_(params, 0.5, norm_type=math.inf if step["how"] == "norm_inf" else 2.0)

    def do_remove(self, step):
        handle = self.handles.get(step["label"])
        if handle is None:
            raise Skip(step["label"])
        handle.remove()
        if step.get("twice"):
            handle.remove()

    def do_apply(self, step):
        """``net.apply`` registering one logging hook on every module."""
        label, kind, ev, handles = step["label"], step["kind"], self.event, []

        def register(m):
            name = self.module_name(m)
            if kind == "fwd":
                handles.append(m.register_forward_hook(lambda mod, args, out: ev("hook", label, kind, name,
                                                                                 self.S(out))))
            elif kind == "fwd_pre":
                handles.append(m.register_forward_pre_hook(lambda mod, args: ev("hook", label, kind, name,
                                                                                self.S(args))))
            else:
                handles.append(m.register_full_backward_hook(
                    lambda mod, gin, gout: ev("hook", label, kind, name, self.S(gin), self.S(gout))))
        self.net.apply(register)
        self.handles[label] = _Handles(handles)
        return len(handles)

    # ---- hooks
    def do_hook(self, step):
        handle = self.register(step, step["kind"], step["on"], step["label"])
        self.handles[step["label"]] = handle

    def after(self, step, label, *args):
        """The hook's side action: remove itself, remove another hook, register a new one (once)."""
        act = step.get("act")
        if not act:
            return
        if act == "hook_output":
            out = args[0] if args else None
            out = out[0] if isinstance(out, tuple) else out
            if isinstance(out, self.T.Tensor) and out.requires_grad:
                def output_hook(g):
                    self.event("hook", label + "^", "tensor", self.S(g))
                out.register_hook(output_hook)
        elif act == "register_global" and not step.get("_done_" + label):
            step["_done_" + label] = True
            ev = self.event

            def global_forward_hook(m, args, out):
                ev("hook", label + "^", "g_fwd", self.module_name(m), self.S(out))
            self.global_handles.append(self.mm.register_module_forward_hook(global_forward_hook))
        elif act == "opt_step":
            opt = self.param_opts.get(label)
            if opt is not None:
                opt.step()
                opt.zero_grad()
        elif act in ("reentrant_grad", "reentrant_backward"):
            self.reentrant(act, label)
        elif act == "grad_of_grad":
            g = args[0] if args else None
            if isinstance(g, self.T.Tensor) and g.requires_grad:
                target = next((t for t in [self.x] + list(self.net.parameters()) if t.requires_grad), None)
                if target is not None:
                    got = self.T.autograd.grad((g * g).sum(), [target], allow_unused=True, retain_graph=True)
                    self.event("grad_of_grad", label, self.S(got))
        elif act == "queue_callback":
            self.T.autograd.Variable._execution_engine.queue_callback(
                lambda: self.event("callback", label))
        elif act == "clear_globals":
            self.do_clear_globals()
        elif act == "remove_self":
            self.handles[label].remove()
        elif act == "remove_self_twice":
            self.handles[label].remove()
            self.handles[label].remove()
        elif act == "remove_next":
            other = self.handles.get(f"h{int(label.rstrip(chr(39))[1:]) + 1}")
            if other is not None:
                other.remove()
        elif act.startswith("grad_mode:"):
            self.switch_grad_mode(act.split(":", 1)[1], label)
        elif act.startswith("register_") and act != "register_global" and not step.get("_done_" + label):
            step["_done_" + label] = True
            self.register_from_hook(act[len("register_"):], label + "~")
        elif act.startswith("remove:"):
            other = self.handles.get(act.split(":", 1)[1])
            if other is not None:
                other.remove()
        elif act == "register" and not step.get("_done_" + label):
            step["_done_" + label] = True
            new_label = label + "'"
            try:
                self.handles[new_label] = self.register({**step, "act": None, "ret": "none"}, step["kind"],
                                                        step["on"], new_label)
            except Skip:
                pass

    def reentrant(self, act, label):
        """Inside a backward hook: autograd.grad or backward on a small graph of its own, whose leaf
        has a logging hook."""
        T = self.T
        with T.enable_grad():  # the pass may run with grad mode off
            leaf = T.tensor([0.5, -1.0], dtype=T.float64, requires_grad=True)
            handle = leaf.register_hook(lambda g: self.event("hook", label + "@", "tensor", self.S(g)))
            try:
                if act == "reentrant_grad":
                    got = T.autograd.grad((leaf * leaf * 3.0).sum(), leaf)
                else:
                    (leaf.exp() * 2.0).sum().backward()
                    got = leaf.grad
            finally:
                handle.remove()
        self.event("reentrant", label, self.S(got))

    def switch_grad_mode(self, mode, label):
        """Inside a hook: the grad mode it runs under, then a small computation under another."""
        T = self.T
        before = T.is_grad_enabled()
        leaf = T.ones(2, dtype=T.float64, requires_grad=True)
        if mode == "set_false":
            T.set_grad_enabled(False)
            try:
                y = leaf * 2.0
            finally:
                T.set_grad_enabled(before)
        else:
            with getattr(T, mode)():
                y = leaf * 2.0
        self.event("grad_mode", label, before, mode, bool(y.requires_grad), y.is_inference(),
                   T.is_grad_enabled(), T.is_inference_mode_enabled())

    def register_from_hook(self, what, label):
        """A hook of another kind registered while a hook runs (once); it only logs."""
        T, ev = self.T, self.event
        if what == "tensor":
            target = next((t for t in [self.x] + list(self.net.parameters()) if t.requires_grad), None)
            if target is None:
                return
            handle = target.register_hook(lambda g: ev("hook", label, "tensor", self.S(g)))
        elif what == "node":
            out = self.env.get("out")
            fn = out.grad_fn if isinstance(out, T.Tensor) else None
            if fn is None:
                return
            handle = fn.register_prehook(lambda grad_outputs: ev("hook", label, "node_pre", fn.name(),
                                                                 self.S(grad_outputs)))
        elif what == "module":
            handle = self.net.register_full_backward_hook(
                lambda m, gin, gout: ev("hook", label, "bw", "net", self.S(gin), self.S(gout)))
        elif what == "g_bw":
            handle = self.mm.register_module_full_backward_hook(
                lambda m, gin, gout: ev("hook", label, "g_bw", self.module_name(m), self.S(gin), self.S(gout)))
            self.global_handles.append(handle)
        else:
            handle = self.mm.register_module_forward_pre_hook(
                lambda m, args: ev("hook", label, "g_fwd_pre", self.module_name(m), self.S(args)))
            self.global_handles.append(handle)
        self.handles[label] = handle

    def wrong(self, ret, value):
        """A replacement torch refuses (or, "non_tensor", one that breaks what follows)."""
        if ret not in ("non_tensor", "wrong_len", "wrong_shape", "wrong_dtype"):
            return None
        if ret == "non_tensor":
            return 1.5
        if ret == "wrong_len":
            return tuple(value) + (None,)
        change = (lambda t: t.unsqueeze(0)) if ret == "wrong_shape" else (lambda t: t.float())
        if isinstance(value, self.T.Tensor):
            return change(value)
        if isinstance(value, (tuple, list)):
            first = next((i for i, v in enumerate(value) if isinstance(v, self.T.Tensor)), None)
            if first is not None:
                return tuple(change(v) if i == first else v for i, v in enumerate(value))
        return value

    def register(self, step, kind, on, label):
        T, mm, ret = self.T, self.mm, step.get("ret", "none")
        ev = self.event

        def done(result):
            if ret == "raise" or (ret == "raise_once" and not step.get("_raised_" + label)):
                step["_raised_" + label] = True
                raise HookFailed(label)
            ev("return", label, self.S(result))
            return result

        if kind == "tensor":
            def hook(g):
                ev("hook", label, kind, self.S(g))
                self.after(step, label, g)
                return done({"none": None, "scale": g * 2.0, "zero": g * 0.0}.get(ret, self.wrong(ret, g)))
            return self.tensor(on).register_hook(hook)
        if kind == "post_acc":
            def hook(p):
                ev("hook", label, kind, self.S(p.grad))
                self.after(step, label)
                return done({"none": None, "self": p, "tensor": p.grad * 2.0 if p.grad is not None else p}.get(ret))
            target = self.tensor(on)
            if step.get("act") == "opt_step":
                self.param_opts[label] = T.optim.SGD([target], lr=0.1)
            return target.register_post_accumulate_grad_hook(hook)
        if kind in ("node_pre", "node_post"):
            fn = self.tensor(on).grad_fn
            if fn is not None and step.get("depth"):
                fn = next((f for f, _ in fn.next_functions if f is not None), None)
            if fn is None:
                raise Skip("no grad_fn")
            if kind == "node_pre":
                def hook(grad_outputs):
                    ev("hook", label, kind, fn.name(), self.S(grad_outputs))
                    self.after(step, label)
                    return done({"none": None, "scale": self.scale(grad_outputs, 2.0)}.get(
                        ret, self.wrong(ret, grad_outputs)))
                return fn.register_prehook(hook)

            def hook(grad_inputs, grad_outputs):
                ev("hook", label, kind, fn.name(), self.S(grad_inputs), self.S(grad_outputs))
                self.after(step, label)
                result = {"none": None, "scale": self.scale(grad_inputs, 3.0),
                          "none_tuple": tuple(None for _ in grad_inputs)}.get(ret, self.wrong(ret, grad_inputs))
                return done(result)
            return fn.register_hook(hook)
        if kind == "multi":
            tensors = [self.tensor(n) for n in on]

            def hook(grads):
                ev("hook", label, kind, self.S(tuple(grads)))
                self.after(step, label)
                return done(None)
            return T.autograd.graph.register_multi_grad_hook(tensors, hook, mode=step.get("mode", "all"))
        if kind in MODULE_HOOK_KINDS or kind in GLOBAL_HOOK_KINDS:
            return self.register_module_hook(step, kind, on, label, ret, done)
        if kind in OPT_HOOK_KINDS:
            def hook(opt, args, kwargs):
                ev("hook", label, kind, type(opt).__name__, len(args), tuple(sorted(kwargs)))
                self.after(step, label)
                return done(None)
            if kind.startswith("g_"):
                register = getattr(self.optmod, "register_optimizer_step_" + kind[6:] + "_hook")
                handle = register(hook)
                self.global_handles.append(handle)
                return handle
            if self.opt is None:
                raise Skip("optimizer")
            return getattr(self.opt, "register_step_" + kind[4:] + "_hook")(hook)
        if kind in OPT_SD_HOOK_KINDS:
            return self.register_optimizer_state_dict_hook(step, kind, label, ret, done)
        if kind in SD_HOOK_KINDS:
            mod = self.module(on)
            if kind == "sd_pre":
                def hook(m, prefix, keep_vars):
                    ev("hook", label, kind, self.module_name(m), prefix, keep_vars)
                    self.after(step, label)
                    return done(None)
                return mod.register_state_dict_pre_hook(hook)
            if kind == "sd_post":
                def hook(m, sd, prefix, meta):
                    ev("hook", label, kind, self.module_name(m), self.S(sd), prefix)
                    self.after(step, label)
                    if ret == "drop_key":
                        drop_first(sd, prefix)
                    return done(None)
                return mod.register_state_dict_post_hook(hook)
            if kind == "load_pre":
                def hook(m, sd, prefix, meta, strict, missing, unexpected, errors):
                    ev("hook", label, kind, self.module_name(m), prefix, strict)
                    self.after(step, label)
                    if ret == "drop_key":
                        drop_first(sd, prefix)
                    elif ret == "error":
                        errors.append(f"refused by {label}")
                    return done(None)
                return mod.register_load_state_dict_pre_hook(hook)

            def hook(m, incompatible):
                ev("hook", label, kind, self.module_name(m), tuple(incompatible.missing_keys),
                   tuple(incompatible.unexpected_keys))
                self.after(step, label)
                if ret == "clear_missing":
                    incompatible.missing_keys.clear()
                elif ret == "add_unexpected":
                    incompatible.unexpected_keys.append(f"added.by.{label}")
                return done(None)
            return mod.register_load_state_dict_post_hook(hook)
        raise ValueError(kind)

    def register_optimizer_state_dict_hook(self, step, kind, label, ret, done):
        if self.opt is None:
            raise Skip("optimizer")
        ev, opt, prepend = self.event, self.opt, step.get("prepend", False)

        def with_lr(sd, lr):
            return {**sd, "param_groups": [{**g, "lr": lr} for g in sd["param_groups"]]}
        if kind == "opt_sd_pre":
            def hook(o):
                ev("hook", label, kind, type(o).__name__)
                self.after(step, label)
                return done(None)
            return opt.register_state_dict_pre_hook(hook, prepend=prepend)
        if kind == "opt_sd_post":
            def hook(o, sd):
                ev("hook", label, kind, tuple(sorted(sd)))
                self.after(step, label)
                if ret == "drop_key":
                    sd.pop("state", None)
                return done(with_lr(sd, 0.05) if ret == "replace" else None)
            return opt.register_state_dict_post_hook(hook, prepend=prepend)
        if kind == "opt_load_pre":
            def hook(o, sd):
                ev("hook", label, kind, tuple(sorted(sd)))
                self.after(step, label)
                if ret == "drop_key":
                    sd.pop("state", None)
                return done(with_lr(sd, 0.02) if ret == "replace" else None)
            return opt.register_load_state_dict_pre_hook(hook, prepend=prepend)

        def hook(o):
            ev("hook", label, kind, o.param_groups[0]["lr"], len(o.state))
            self.after(step, label)
            return done(None)
        return opt.register_load_state_dict_post_hook(hook, prepend=prepend)

    def register_module_hook(self, step, kind, on, label, ret, done):  # noqa: C901 - one branch per kind
        ev, name = self.event, self.module_name
        base = kind[2:] if kind.startswith("g_") else kind
        with_kwargs = step.get("with_kwargs", False)

        if base == "fwd_pre":
            if with_kwargs:
                def hook(m, args, kwargs):
                    ev("hook", label, kind, name(m), self.S(args), tuple(sorted(kwargs)))
                    self.after(step, label)
                    kwargs = {**kwargs, "scale": 2.0} if "scale" in kwargs else kwargs
                    if ret == "non_tensor":
                        return done(((1.5,), kwargs))
                    return done(((self.scale(args[0], 2.0),) + tuple(args[1:]), kwargs) if ret == "scale" else None)
            else:
                def hook(m, args):
                    ev("hook", label, kind, name(m), self.S(args))
                    self.after(step, label)
                    if ret == "non_tensor":
                        return done(1.5)
                    return done((self.scale(args[0], 2.0),) + tuple(args[1:]) if ret == "scale" else None)
        elif base == "fwd":
            if with_kwargs:
                def hook(m, args, kwargs, out):
                    ev("hook", label, kind, name(m), self.S(args), tuple(sorted(kwargs)), self.S(out))
                    self.after(step, label, out)
                    return done({"none": None, "scale": self.scale(out, 3.0)}.get(ret, self.wrong(ret, out)))
            else:
                def hook(m, args, out):
                    ev("hook", label, kind, name(m), self.S(args), self.S(out))
                    self.after(step, label, out)
                    return done({"none": None, "scale": self.scale(out, 3.0)}.get(ret, self.wrong(ret, out)))
        elif base == "bw_pre":
            def hook(m, grad_output):
                ev("hook", label, kind, name(m), self.S(grad_output))
                self.after(step, label)
                result = {"none": None, "scale": self.scale(grad_output, 0.5),
                          "none_tuple": tuple(None for _ in grad_output),
                          "bare": grad_output[0] if grad_output else None}.get(ret, self.wrong(ret, grad_output))
                return done(result)
        else:  # bw and legacy_bw
            def hook(m, grad_input, grad_output):
                ev("hook", label, kind, name(m), self.S(grad_input), self.S(grad_output))
                self.after(step, label)
                result = {"none": None, "scale": self.scale(grad_input, 3.0),
                          "none_tuple": tuple(None for _ in grad_input)}.get(ret, self.wrong(ret, grad_input))
                return done(result)

        if kind.startswith("g_"):
            register = {"fwd_pre": self.mm.register_module_forward_pre_hook,
                        "fwd": self.mm.register_module_forward_hook,
                        "bw_pre": self.mm.register_module_full_backward_pre_hook,
                        "bw": self.mm.register_module_full_backward_hook,
                        "legacy_bw": self.mm.register_module_backward_hook}[base]
            handle = register(hook)
            self.global_handles.append(handle)
            return handle
        mod = self.module(on)
        if base == "fwd_pre":
            return mod.register_forward_pre_hook(hook, prepend=step.get("prepend", False), with_kwargs=with_kwargs)
        if base == "fwd":
            return mod.register_forward_hook(hook, prepend=step.get("prepend", False), with_kwargs=with_kwargs,
                                             always_call=step.get("always_call", False))
        if base == "bw_pre":
            return mod.register_full_backward_pre_hook(hook, prepend=step.get("prepend", False))
        if base == "bw":
            return mod.register_full_backward_hook(hook, prepend=step.get("prepend", False))
        return mod.register_backward_hook(hook)


MODULE_REGISTRIES = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_pre_hooks",
                     "_backward_hooks", "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks")
OPTIMIZER_REGISTRIES = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                        "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                        "_optimizer_load_state_dict_post_hooks")
GLOBAL_REGISTRIES = ("forward_pre_hooks", "forward_hooks", "forward_hooks_with_kwargs", "forward_hooks_always_called",
                     "backward_pre_hooks", "backward_hooks", "module_registration_hooks",
                     "parameter_registration_hooks", "buffer_registration_hooks")


def drop_first(state_dict, prefix):
    """Deletes the first key under ``prefix`` from a state dict (what a hook may do in place)."""
    key = next((k for k in state_dict if k.startswith(prefix)), None)
    if key is not None:
        del state_dict[key]


class _Handles:
    """The handles ``net.apply`` registered, removed together."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


def _on_alarm(signum, frame):
    raise FuzzTimeout()


def interpret(T, program, timeout=5.0):
    """Run ``program`` on framework ``T``; return (event log, exception texts)."""
    interp = Interpreter(T, _fresh(program))
    use_alarm = timeout and hasattr(signal, "setitimer")
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        interp.run()
    except FuzzTimeout:
        interp.event("timeout")
    except Exception as exc:  # noqa: BLE001 - a crash outside any step (e.g. building the model)
        record, msg = exception_record(exc)
        interp.event("crash", *record[1:])
        interp.messages.append(f"{type(exc).__name__}: {msg}")
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return interp.log, interp.messages


def _fresh(program):
    """A deep copy (the interpreter marks one-shot registrations in the steps it runs)."""
    return {**program, "model": [dict(b) for b in program["model"]],
            "steps": [{k: (list(v) if isinstance(v, list) else v) for k, v in s.items()} for s in program["steps"]]}


# --------------------------------------------------------------------------- comparison

def same(a, b, atol=ATOL):
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool) or isinstance(b, bool):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=RTOL, abs_tol=atol)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if atol == ATOL and a and b and a[0] == "param" == b[0]:
            atol = PARAM_ATOL
        return len(a) == len(b) and all(same(x, y, atol) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def compare(want, got):
    """None when the logs agree; else (index, torch event, hookgrad event) of the first difference."""
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if not same(w, g):
            return i, w, g
    return None


def signature(want, diff):
    """A coarse name for a divergence (the step it happened in and the two event tags), so that
    shrinking keeps the same bug rather than wandering to another one."""
    index, w, g = diff
    step = next((e[1] for e in reversed(want[:index + 1]) if e and e[0] == "step"), None)
    return step, w[0] if w else None, g[0] if g else None


# Touches what frameworks import lazily on first use, so that no timer interrupts an import.
WARM_UP = {"seed": 0, "x_requires_grad": True, "model": [{"kind": "linear", "name": "b0"}, {"kind": "relu", "name": "b1"}],
           "steps": [{"k": "optimizer", "type": "sgd"}, {"k": "forward", "saved": "log"}, {"k": "roots", "how": "sum"},
                     {"k": "backward", "create_graph": True}, {"k": "step"}, {"k": "optimizer", "type": "adam"},
                     {"k": "step"}, {"k": "state_dict", "load": True}]}


class Frameworks:
    """torch and hookgrad, imported once per process."""

    def __init__(self, reference=None, candidate=None):
        self.reference = reference or importlib.import_module("torch")
        self.candidate = candidate or importlib.import_module("hookgrad")
        for T in (self.reference, self.candidate):
            interpret(T, WARM_UP, timeout=None)  # lazy imports (torch's optimizers) outside the timer


    def check(self, program, timeout=5.0):
        """(diff or None, torch log, hookgrad log, torch messages, hookgrad messages)."""
        want, wmsg = interpret(self.reference, program, timeout)
        got, gmsg = interpret(self.candidate, program, timeout)
        if timeout and ("timeout",) in (want[-1:] + got[-1:]):
            # a busy machine can stall a process for seconds: a hang must also happen with more time
            want, wmsg = interpret(self.reference, program, timeout * 4)
            got, gmsg = interpret(self.candidate, program, timeout * 4)
        return compare(want, got), want, got, wmsg, gmsg


# --------------------------------------------------------------------------- shrinking

STEP_DEFAULTS = {"ret": "none", "act": None, "prepend": False, "with_kwargs": False, "always_call": False,
                 "retain_graph": False, "create_graph": False, "saved": None, "no_grad": False, "view": False,
                 "inputs": None, "load": False, "mode": "all", "method": False, "grad_tensors": False,
                 "grad_ctx": None, "inplace": False, "depth": 0, "twice": False, "ctx_hook": None,
                 "variant": None, "replace": False, "grad_outputs": None, "materialize_grads": False,
                 "batched": False, "only_inputs": None, "cached": False, "tf_mode": False,
                 "saved_ctx": None}


def shrink(fw: Frameworks, program, max_checks=400, timeout=5.0):
    """Delta-debug ``program`` down to a smaller one that shows the same divergence."""
    diff, want, *_ = fw.check(program, timeout)
    if diff is None:
        return program
    target = signature(want, diff)
    checks = 0

    def still(candidate):
        nonlocal checks
        checks += 1
        d, w, *_ = fw.check(candidate, timeout)
        return d is not None and signature(w, d) == target

    current = program
    changed = True
    while changed and checks < max_checks:
        changed = False
        # 1. steps: remove chunks, halving the chunk size (ddmin)
        n = len(current["steps"])
        chunk = max(1, n // 2)
        while chunk >= 1 and checks < max_checks:
            i = 0
            while i < len(current["steps"]) and checks < max_checks:
                steps = current["steps"][:i] + current["steps"][i + chunk:]
                candidate = {**current, "steps": steps}
                if still(candidate):
                    current, changed = candidate, True
                else:
                    i += chunk
            chunk //= 2
        # 2. model blocks
        i = 0
        while i < len(current["model"]) and len(current["model"]) > 1 and checks < max_checks:
            candidate = {**current, "model": current["model"][:i] + current["model"][i + 1:]}
            if still(candidate):
                current, changed = candidate, True
            else:
                i += 1
        # 3. options back to their defaults, one at a time
        for flag in ("x_requires_grad", "x_subclass"):
            if current.get(flag) and checks < max_checks:
                candidate = {**current, flag: False}
                if still(candidate):
                    current, changed = candidate, True
        for si in range(len(current["steps"])):
            for key, default in STEP_DEFAULTS.items():
                step = current["steps"][si]
                if key == "inputs" and step["k"] == "grad":
                    continue
                if key in step and step[key] != default and checks < max_checks:
                    simpler = {k: v for k, v in step.items() if k != key}
                    candidate = {**current, "steps": current["steps"][:si] + [simpler] + current["steps"][si + 1:]}
                    if still(candidate):
                        current, changed = candidate, True
            # list-valued options (grad inputs, multi-grad hook tensors) lose one entry at a time
            for key in ("inputs", "on"):
                j = 0
                while isinstance(current["steps"][si].get(key), list) and j < len(current["steps"][si][key]) \
                        and len(current["steps"][si][key]) > 1 and checks < max_checks:
                    step = current["steps"][si]
                    simpler = {**step, key: step[key][:j] + step[key][j + 1:]}
                    candidate = {**current, "steps": current["steps"][:si] + [simpler] + current["steps"][si + 1:]}
                    if still(candidate):
                        current, changed = candidate, True
                    else:
                        j += 1
        # blocks: a complex block replaced by a Linear
        for bi, block in enumerate(current["model"]):
            if block["kind"] != "linear" and checks < max_checks:
                candidate = {**current, "model": current["model"][:bi] + [{**block, "kind": "linear"}]
                             + current["model"][bi + 1:]}
                if still(candidate):
                    current, changed = candidate, True
    return current


# --------------------------------------------------------------------------- rendering

def _args(step, keys):
    return ", ".join(f"{k}={step[k]!r}" for k in keys if step.get(k) not in (None, False, "none"))


def render_step(step):
    if step.get("tf_mode"):
        return "with LoggingMode(): " + render_step({key: v for key, v in step.items() if key != "tf_mode"})
    if step.get("saved_ctx"):
        return f"with saved_tensors_hooks({step['saved_ctx']}): " + render_step(
            {key: v for key, v in step.items() if key != "saved_ctx"})
    k = step["k"]
    if k == "hook":
        extra = _args(step, ["ret", "act", "prepend", "with_kwargs", "always_call", "mode", "depth"])
        target = {"global": "<global>", "opt": "opt"}.get(step["on"], step["on"]) if isinstance(step["on"], str) \
            else "[" + ", ".join(step["on"]) + "]"
        return f"{step['label']} = register {step['kind']} hook on {target}({extra})"
    if k == "forward":
        ctx = " with saved_tensors_hooks(" + step["saved"] + ")" if step.get("saved") else ""
        if step.get("saved") == "nested":
            ctx = " with saved_tensors_hooks(outer), saved_tensors_hooks(log)"
        ctx += " under no_grad" if step.get("no_grad") else ""
        ctx += " under parametrize.cached()" if step.get("cached") else ""
        ctx += f" inside `with {step['ctx_hook']}.register_forward_hook(h):`" if step.get("ctx_hook") else ""
        if step.get("grad_ctx"):
            ctx += f" ({step['grad_ctx']['block']} under {step['grad_ctx']['mode']}"
            ctx += ", the rest under no_grad)" if step["grad_ctx"]["mode"] == "enable_grad" else ")"
        return f"out = net(x){ctx}"
    if k == "roots":
        return {"sum": "roots = [out.sum()]", "square": "roots = [(out * out).mean()]",
                "two": "roots = [out.sum(), (out * out).sum()]",
                "split": "roots = out.split(1); grads = [1, 2, ...]",
                "unbind": "roots = torch.unbind(out); grads = [1, 2, ...]",
                "tuple": "roots = <tuple block's two outputs>; grads = [1, 2]"}[step["how"]]
    if k == "backward" and (step.get("method") or step.get("grad_tensors") or step.get("ctx_hook")
                            or step.get("grad_outputs")):
        extra = _args(step, ["retain_graph", "create_graph", "inputs", "ctx_hook"])
        grads = "[1.5, 2.5, ...]" if step.get("grad_tensors") else "grads"
        if step.get("grad_outputs"):
            grads = f"<{step['grad_outputs']} grads>"
        if step.get("method"):
            return f"roots[0].backward({grads}[0]" + (", " + extra if extra else "") + ")"
        return f"torch.autograd.backward(roots, {grads}" + (", " + extra if extra else "") + ")"
    if k == "backward":
        return "torch.autograd.backward(roots, grads" + (", " + _args(step, ["retain_graph", "create_graph", "inputs"])
                                                        if _args(step, ["retain_graph", "create_graph", "inputs"]) else "") + ")"
    if k == "grad":
        grads = f"<{step['grad_outputs']} grads>" if step.get("grad_outputs") else "grads"
        options = _args(step, ["allow_unused", "retain_graph", "create_graph", "materialize_grads"])
        if "only_inputs" in step:
            options += f", only_inputs={step['only_inputs']}"
        if step.get("batched"):
            grads, options = "<grads stacked twice>", options + ", is_grads_batched=True"
        return f"last_grads = torch.autograd.grad(roots, {step['inputs']}, {grads}, " + options + ")"
    if k == "double":
        return "sum((g * g).sum() for g in last_grads (or leaf .grad)).backward()"
    if k == "retain_grad":
        if step.get("view"):
            return f"{step['on']} = {step['on']}.view({step['on']}.shape); {step['on']}.retain_grad()"
        return f"{step['on']}.retain_grad()"
    if k == "mode":
        return f"{step['on']}.{'train()' if step['train'] else 'eval()'}"
    if k == "requires_grad":
        return f"{step['on']}.requires_grad_({bool(step.get('value'))})"
    if k == "clear_globals":
        return "for d in <torch.nn.modules.module._global_*_hooks dicts>: d.clear()"
    if k == "deepcopy":
        return "net = copy.deepcopy(net)"
    if k == "functional_call":
        return "torch.func.functional_call(net, {n: p * 1.5 for n, p in net.named_parameters()}, (x,)).sum().backward()"
    if k == "rebuild":
        return f"net.{step['on']} = <a fresh {step['on']} block>"
    if k == "sched":
        return f"sched = sched or <{step['type']} lr scheduler on opt>; sched.step()"
    if k == "detach":
        return f"{step['on']}.detach_()" if step.get("inplace") else f"{step['on']} = {step['on']}.detach()"
    if k == "clip":
        return {"norm": "clip_grad_norm_(net.parameters(), 0.5)",
                "norm_inf": "clip_grad_norm_(net.parameters(), 0.5, norm_type=inf)",
                "value": "clip_grad_value_(net.parameters(), 0.1)"}[step["how"]]
    if k == "remove":
        return f"{step['label']}.remove()" + (f"; {step['label']}.remove()" if step.get("twice") else "")
    if k == "registration_hook":
        return (f"{step['label']} = register_module_{step['what']}_registration_hook(<log"
                + (", return a replacement" if step.get("replace") else "") + ">)")
    if k == "grow":
        return f"{step['on']}.<register a new {step['what']}>"
    if k == "apply":
        return f"{step['label']} = net.apply(<register a logging {step['kind']} hook>)"
    if k == "inplace":
        target = step["on"] + (".view(-1)" if step.get("view") else "")
        prefix = "with no_grad(): " if step.get("no_grad") else ""
        return f"{prefix}{target}.{step['op']}({2.0 if step['op'] == 'mul_' else 1.0})"
    if k == "optimizer":
        return "opt = " + ("SGD(net.parameters(), lr=0.1, momentum=0.5)" if step["type"] == "sgd"
                           else f"Adam(net.parameters(), lr=0.01, eps={ADAM_EPS})")
    if k == "step":
        return "opt.step()"
    if k == "set_grad":
        return {"none": "{}.grad = None", "del": "del {}.grad", "zeros": "{}.grad = zeros_like({})",
                "ones": "{}.grad = ones_like({})", "wrong_shape": "{}.grad = zeros(<one more element>)",
                "wrong_dtype": "{}.grad = zeros_like({}, dtype=float32)",
                "requires_grad": "{}.grad = ones_like({}).requires_grad_()"}[step["how"]].format(step["on"], step["on"])
    if k == "saved_attr":
        node = f"{step['on']}.grad_fn" + (".next_functions[0][0]" if step.get("depth") else "")
        return f"[getattr({node}, n) for n in dir({node}) if n.startswith('_saved_')]"
    if k == "opt_state_dict":
        return "sd = opt.state_dict()" + ("; opt.load_state_dict(sd)" if step.get("load") else "")
    if k == "zero_grad":
        return f"({step.get('on') or 'opt or net'}).zero_grad(set_to_none={step['set_to_none']})"
    if k == "state_dict":
        on = step.get("on") or "net"
        text = f"sd = {on}.state_dict(" + ("prefix='p.'" if step.get("variant") == "prefix" else "") + ")"
        if step.get("load"):
            text += f"; {on}.load_state_dict({{k: v + 0.5 for k, v in sd.items()}}"
            text += f", <{step['variant']}>)" if step.get("variant") else ")"
        return text
    return repr(step)


def render(program):
    blocks = ", ".join(f"{b['name']}={b['kind']}" for b in program["model"])
    lines = [f"# seed {program['seed']}",
             f"net = Net({blocks})    # width {WIDTH}, float64; x: ({BATCH}, {WIDTH})"
             + (", requires_grad" if program.get("x_requires_grad") else "")
             + (", a LoggedTensor (its __torch_function__ logs inside passes)" if program.get("x_subclass") else "")]
    lines += [render_step(s) for s in program["steps"]]
    return "\n".join(lines)


def render_log(log):
    def short(v):
        if isinstance(v, tuple) and len(v) == 5 and v[0] == "T":
            vals = ", ".join(f"{x:.4g}" for x in v[3][:6]) + (", ..." if len(v[3]) > 6 else "")
            return f"T{list(v[2])}[{vals}]" + ("rg" if v[4] else "")
        if isinstance(v, tuple):
            return "(" + ", ".join(short(x) for x in v) + ")"
        return repr(v)
    return "\n".join("  " + " ".join(short(x) for x in e) for e in log)


def report(program, diff, want, got, wmsg, gmsg):
    index, w, g = diff
    lines = ["program:", *("  " + line for line in render(program).splitlines()),
             f"first difference at event {index}:", f"  torch:    {w}", f"  hookgrad: {g}",
             "torch log:", render_log(want), "hookgrad log:", render_log(got)]
    if wmsg or gmsg:
        lines += ["torch exceptions and warnings: " + " | ".join(m[:200] for m in wmsg),
                  "hookgrad exceptions and warnings: " + " | ".join(m[:200] for m in gmsg)]
    return "\n".join(lines)


# --------------------------------------------------------------------------- command line

def run_many(seeds, disabled=frozenset(), fw=None, timeout=5.0, do_shrink=True, out=print, verbose=False,
             limit=None):
    """Check each seed's program; return a list of (seed, shrunk program, diff, logs...); stop after
    ``limit`` divergences (shrinking is the slow part)."""
    fw = fw or Frameworks()
    found = []
    for seed in seeds:
        program = generate(seed, disabled)
        diff, want, got, wmsg, gmsg = fw.check(program, timeout)
        if diff is None:
            if verbose:
                out(f"seed {seed}: ok ({len(program['steps'])} steps, {len(want)} events)")
            continue
        small = shrink(fw, program, timeout=timeout) if do_shrink else program
        diff2, want2, got2, wmsg2, gmsg2 = fw.check(small, timeout)
        if diff2 is None:  # flaky: keep the original
            small, diff2, want2, got2, wmsg2, gmsg2 = program, diff, want, got, wmsg, gmsg
        out(f"seed {seed}: DIVERGES ({len(program['steps'])} steps, shrunk to {len(small['steps'])})")
        out(report(small, diff2, want2, got2, wmsg2, gmsg2))
        found.append((seed, small, diff2, want2, got2))
        if limit is not None and len(found) >= limit:
            out(f"stopped after {limit} divergences")
            break
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of programs")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--ci", action="store_true", help="leave out KNOWN_DIVERGENT_FEATURES (the suite's setting)")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per program and framework")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the divergences and the total")
    args = parser.parse_args(argv)
    disabled = frozenset(KNOWN_DIVERGENT_FEATURES) if args.ci else frozenset()
    fw = Frameworks()
    start = time.perf_counter()
    found = run_many(range(args.seed, args.seed + args.n), disabled, fw, args.timeout,
                     not args.no_shrink, verbose=not args.quiet)
    elapsed = time.perf_counter() - start
    print(f"{args.n - len(found)} of {args.n} programs ran clean, {len(found)} diverged ({elapsed:.1f} s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

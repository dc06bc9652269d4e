"""The differential hook fuzzer (tests/hookfuzz.py): a fixed set of seeds must run the same on
torch and hookgrad, and the fuzzer itself must catch and shrink a deliberately broken hookgrad."""
from __future__ import annotations

import json
import time

import pytest

import hookfuzz
import hookgrad

CI_SEEDS = range(500)
CI_DISABLED = frozenset(hookfuzz.KNOWN_DIVERGENT_FEATURES)


@pytest.fixture(scope="module")
def frameworks():
    return hookfuzz.Frameworks()


def _program(seed, model, steps, x_requires_grad=False):
    return {"seed": seed, "x_requires_grad": x_requires_grad,
            "model": [{"kind": kind, "name": f"b{i}"} for i, kind in enumerate(model)], "steps": steps}


_FORWARD, _SUM = {"k": "forward"}, {"k": "roots", "how": "sum"}
# Shrunk programs of divergences the fuzzer found and hookgrad fixed (the behaviour each pins), run
# whatever KNOWN_DIVERGENT_FEATURES says.
REGRESSION_PROGRAMS = {
    "requires_grad_(False) on a bias between forward and backward": _program(156, ["conv2d"], [
        _FORWARD, {"k": "requires_grad", "on": "b0.conv.bias"}, {"k": "roots", "how": "unbind"}, {"k": "backward"}]),
    "an unrecorded custom Function call packs nothing": _program(9, ["function", "linear"], [
        {"k": "hook", "kind": "fwd", "on": "b1", "label": "h2"}, {"k": "forward", "saved": "scale"}]),
    "reentrant checkpoint under autograd.grad raises": _program(159, ["conv2d", "checkpoint_reentrant"], [
        _FORWARD, {"k": "hook", "kind": "bw_pre", "on": "b1.inner", "label": "h4"}, {"k": "roots", "how": "two"},
        {"k": "grad", "inputs": ["b0.conv.bias"], "allow_unused": True}]),
    "clip_grad_value_ without gradients raises": _program(3, ["linear"], [{"k": "clip", "how": "value"}]),
    "attention packs its projection's input before the weight": _program(18, ["mha"], [
        {"k": "forward", "saved": "log"}], x_requires_grad=True),
    "embedding's double backward stops on the freed graph": _program(78, ["linear", "embedding"], [
        _FORWARD, {"k": "roots", "how": "two"}, {"k": "backward", "create_graph": True}, {"k": "double"}]),
    "conv's double backward gives a leaf input None": _program(953, ["conv1d"], [
        {"k": "hook", "kind": "post_acc", "on": "x", "label": "h0"}, _FORWARD, {"k": "roots", "how": "split"},
        {"k": "grad", "inputs": ["b0.conv.bias"], "create_graph": True}, {"k": "double"}], x_requires_grad=True),
    "conv's weight gradient reads its input as unpacked": _program(1181, ["linear", "conv1d"], [
        {"k": "forward", "saved": "grad_mode"}, {"k": "inplace", "on": "a_b0", "op": "add_"},
        {"k": "roots", "how": "two"}, {"k": "backward"}]),
    "once_differentiable gradients require grad under create_graph": _program(1277, ["function_once", "linear"], [
        _FORWARD, {"k": "hook", "kind": "multi", "on": ["x"], "label": "h4", "mode": "all"}, _SUM,
        {"k": "backward", "create_graph": True}], x_requires_grad=True),
    "save_on_cpu keeps the tensor itself": _program(1393, ["linear", "shared"], [
        {"k": "forward", "saved": "save_on_cpu"}, {"k": "inplace", "on": "a_b0", "op": "mul_"},
        {"k": "roots", "how": "unbind"}, {"k": "grad", "inputs": ["shared.weight"], "allow_unused": True}]),
    "batch norm's running statistics keep their version": _program(4614, ["batchnorm"], [
        {"k": "hook", "kind": "g_bw", "on": "global", "label": "h0"}, _FORWARD, {"k": "roots", "how": "unbind"},
        _FORWARD, {"k": "backward"}], x_requires_grad=True),
    "a saved tensor detached in place, then changed": _program(4661, ["linear", "linear"], [
        _FORWARD, {"k": "detach", "on": "a_b0", "inplace": True}, {"k": "inplace", "on": "a_b0", "op": "add_"},
        {"k": "roots", "how": "unbind"}, {"k": "backward"}]),
    "a view made under no_grad requires grad when its base does": _program(3978, ["conv1d"], [
        {"k": "hook", "kind": "g_fwd_pre", "on": "global", "label": "h1"},
        {"k": "forward", "grad_ctx": {"block": "b0", "mode": "no_grad"}}], x_requires_grad=True),
    "a view made under no_grad has no grad_fn or accumulator": _program(920, ["linear", "reshape"], [
        {"k": "forward", "grad_ctx": {"block": "b1", "mode": "no_grad"}},
        {"k": "hook", "kind": "multi", "on": ["out"], "label": "h3", "mode": "all"}]),
    "a view made under no_grad, hooked by the next module": _program(1820, ["linear", "avgpool"], [
        {"k": "hook", "kind": "fwd_pre", "on": "b1.pool", "label": "h2"},
        {"k": "forward", "grad_ctx": {"block": "b1", "mode": "no_grad"}}]),
    "detach_ of a view raises": _program(2134, ["maxpool"], [_FORWARD, {"k": "detach", "on": "a_b0",
                                                                         "inplace": True}]),
    "checkpoint over a view made under no_grad: the recomputation saves more": _program(
        8894, ["linear", "reshape", "checkpoint"], [{"k": "forward", "saved": "detach",
                                                     "grad_ctx": {"block": "b1", "mode": "no_grad"}}, _SUM,
                                                    {"k": "backward"}]),
    "a view of a leaf view, after an optimizer step in a post-accumulate hook": _program(18813, ["reshape"], [
        {"k": "hook", "kind": "post_acc", "on": "x", "label": "h1", "act": "opt_step"}, _FORWARD, _SUM,
        {"k": "backward"}, {"k": "grad", "inputs": ["out"], "allow_unused": True}], x_requires_grad=True),
    "Adam on attention's key bias, whose gradient is zero up to rounding": _program(16683, ["mha"], [
        {"k": "optimizer", "type": "adam"}, {"k": "hook", "kind": "g_fwd", "on": "global", "label": "h0", "ret": "scale"},
        {"k": "hook", "kind": "g_fwd_pre", "on": "global", "label": "h1", "ret": "scale"}, _FORWARD,
        {"k": "roots", "how": "square"}, {"k": "backward"}, {"k": "step"}]),
    "a second pass through avg pooling's backward reaches its input's freed history": _program(
        15180, ["linear", "avgpool", "linear"], [_FORWARD, {"k": "roots", "how": "unbind"},
                                                 {"k": "grad", "inputs": ["b0.bias"], "allow_unused": True,
                                                  "create_graph": True}, {"k": "double"}]),
    "a second backward through a frozen linear that saved nothing": _program(10236, ["linear"], [
        {"k": "hook", "kind": "bw", "on": "net", "label": "h1", "act": "queue_callback"},
        {"k": "requires_grad", "on": "b0.weight"}, _FORWARD, _SUM, {"k": "backward"}, {"k": "backward"}]),
    "detach_ of an inference tensor's view": _program(23450, ["avgpool"], [
        {"k": "forward", "grad_ctx": {"block": "b0", "mode": "inference_mode"}},
        {"k": "detach", "on": "a_b0", "inplace": True}]),
    "a custom Function reads its saved input detached in place": _program(6579, ["mha", "function"], [
        {"k": "hook", "kind": "bw_pre", "on": "b0.attn", "label": "h2"}, _FORWARD,
        {"k": "detach", "on": "a_b0", "inplace": True}, {"k": "roots", "how": "split"},
        {"k": "grad", "inputs": ["b0.attn.in_proj_weight"], "allow_unused": True}]),
    "a forward hook's float output given to a multi-grad hook": _program(102, ["linear"], [
        {"k": "hook", "kind": "fwd", "on": "b0", "label": "h7", "ret": "non_tensor"}, _FORWARD,
        {"k": "hook", "kind": "multi", "on": ["a_b0"], "label": "h10", "mode": "all"}]),
    "a forward pre-hook's float input to Sigmoid": _program(1207, ["sigmoid"], [
        {"k": "hook", "kind": "fwd_pre", "on": "net", "label": "h1", "ret": "non_tensor"}, _FORWARD]),
    "an unpacked view made under inference_mode requires grad under create_graph": _program(
        1329, ["linear", "reshape", "linear", "maxpool"], [
            {"k": "hook", "kind": "bw_pre", "on": "b3.pool", "label": "h7", "ret": "none_tuple"},
            {"k": "forward", "saved": "scale", "grad_ctx": {"block": "b1", "mode": "inference_mode"}},
            {"k": "roots", "how": "two"}, {"k": "backward", "create_graph": True}, {"k": "double"}]),
    "a double backward through an in-place ReLU on a view under pack hooks": _program(
        8524, ["conv1d", "relu_inplace", "seq"], [
            {"k": "forward", "saved": "clone"}, {"k": "roots", "how": "unbind"},
            {"k": "grad", "inputs": ["b0.conv.weight"], "allow_unused": True, "retain_graph": True,
             "create_graph": True}, {"k": "double"}]),
    "a pack hook that raises leaves batch norm's running statistics alone": _program(2791, ["batchnorm"], [
        {"k": "forward", "saved": "raise_pack"}]),
    "a linear's saved input strides are empty when the input needs no gradient": _program(34, ["linear"], [
        _FORWARD, {"k": "saved_attr", "on": "a_b0", "depth": 0}]),
    "a float32 matrix from an unpack hook is refused by the linear's backward": _program(166, ["linear", "linear"], [
        {"k": "forward", "saved": "unpack_float32"}, {"k": "hook", "kind": "tensor", "on": "a_b0", "label": "h2"},
        {"k": "roots", "how": "two"}, {"k": "backward"}]),
    "a flattened matrix from an unpack hook is refused by the linear's backward": _program(110, ["linear"], [
        {"k": "forward", "saved": "unpack_flat"}, {"k": "roots", "how": "unbind"}, {"k": "backward"}]),
    "a _saved_ attribute reads a tensor detached in place": _program(8460, ["linear", "linear"], [
        _FORWARD, {"k": "detach", "on": "a_b0", "inplace": True}, {"k": "saved_attr", "on": "a_b1", "depth": 0}]),
    "a node post-hook on a gradient through tanh, in the second-order pass": _program(261, ["linear", "tanh"], [
        _FORWARD, {"k": "roots", "how": "split"},
        {"k": "grad", "inputs": ["a_b0"], "allow_unused": True, "create_graph": True},
        {"k": "hook", "kind": "node_post", "on": "g0", "label": "hg8"}, {"k": "double"}]),
    "a node pre-hook on a gradient through sigmoid, in the second-order pass": _program(341, ["linear", "sigmoid"], [
        _FORWARD, {"k": "roots", "how": "square"},
        {"k": "grad", "inputs": ["a_b0"], "allow_unused": True, "create_graph": True},
        {"k": "hook", "kind": "node_pre", "on": "g0", "label": "hg10"}, {"k": "double"}]),
    "autograd.grad with batched gradients": _program(228, ["moduledict"], [
        _FORWARD, {"k": "roots", "how": "split"},
        {"k": "grad", "inputs": ["b0.layers.lin.weight"], "allow_unused": True, "batched": True}]),
    "a packed in-place ReLU output aliases its tensor, changed again in place": _program(
        24277, ["lstm", "relu_inplace"], [
            {"k": "forward", "saved": "save_on_cpu"}, {"k": "hook", "kind": "node_post", "on": "a_b0", "label": "h2"},
            {"k": "inplace", "on": "a_b1", "op": "add_"}, _SUM,
            {"k": "grad", "inputs": ["b0.rnn.bias_hh_l0"], "allow_unused": True}]),
    "spectral norm's vdot packs only the vector a gradient needs": _program(27, ["spectral_norm"], [
        {"k": "forward", "saved": "scale"}]),
    "spectral norm's power iteration assigns its buffers (registration hooks run)": _program(870, ["spectral_norm"], [
        {"k": "registration_hook", "what": "buffer", "label": "h2"}, _FORWARD]),
    "group norm's statistics are saved as its outputs": _program(82, ["groupnorm"], [
        _FORWARD, {"k": "saved_attr", "on": "out", "depth": 0}]),
    "a legacy backward hook on group norm sees its three output gradients": _program(610, ["groupnorm"], [
        {"k": "hook", "kind": "legacy_bw", "on": "b0", "label": "h0"}, _FORWARD, {"k": "roots", "how": "unbind"},
        {"k": "backward"}]),
    "bilinear packs only the operands a gradient needs": _program(503, ["bilinear"], [
        {"k": "forward", "saved": "raise_unpack"}]),
    "a module registration hook replacing a rebuilt block's parametrizations dict": _program(
        1887, ["spectral_norm"], [{"k": "registration_hook", "what": "module", "label": "h7", "replace": True},
                                  {"k": "rebuild", "on": "b0"}]),
    "a node post-hook on a gradient through GELU, in the second-order pass": _program(301809, ["linear", "gelu"], [
        _FORWARD, {"k": "roots", "how": "square"},
        {"k": "grad", "inputs": ["a_b0"], "allow_unused": True, "create_graph": True},
        {"k": "hook", "kind": "node_post", "on": "g0", "label": "hg9"}, {"k": "double"}]),
    "enable_grad inside a forward hook under inference_mode records nothing": _program(101248, ["modulelist"], [
        {"k": "hook", "kind": "fwd", "on": "b0.layers.0", "label": "h2", "act": "grad_mode:enable_grad"},
        {"k": "forward", "grad_ctx": {"block": "b0", "mode": "inference_mode"}}]),
    "a block rebuilt under a parameter registration hook": _program(118, ["linear", "prelu"], [
        {"k": "registration_hook", "what": "parameter", "label": "h0"}, {"k": "rebuild", "on": "b0"},
        {"k": "rebuild", "on": "b1"}, _FORWARD, _SUM, {"k": "backward"}]),
}


@pytest.mark.parametrize("name", list(REGRESSION_PROGRAMS))
def test_regression_programs_run_the_same(frameworks, name):
    program = REGRESSION_PROGRAMS[name]
    diff, want, got, wmsg, gmsg = frameworks.check(program)
    assert diff is None, hookfuzz.report(program, diff, want, got, wmsg, gmsg)


def test_fixed_seeds_run_the_same_on_torch_and_hookgrad(frameworks):
    """Every CI program's event log matches torch's; a divergence is shown shrunk, with both logs."""
    reports = []
    found = hookfuzz.run_many(CI_SEEDS, CI_DISABLED, frameworks, timeout=5.0, out=reports.append, limit=3)
    assert not found, "\n".join(reports)


def test_programs_are_plain_data_and_reproducible():
    first, again = hookfuzz.generate(17), hookfuzz.generate(17)
    assert first == again
    assert first != hookfuzz.generate(18)
    text = hookfuzz.render(first)
    assert text.startswith("# seed 17") and "net = Net(" in text
    for seed in range(200):
        program = hookfuzz.generate(seed)
        assert json.loads(json.dumps(program)) == program
        assert len(hookfuzz.render(program).splitlines()) == len(program["steps"]) + 2


@pytest.mark.parametrize("name", ["torch", "hookgrad"])
def test_a_program_logs_the_same_whatever_ran_before(frameworks, name):
    """Programs leave no global state behind (global hooks, grad mode, saved-tensor hooks)."""
    T = frameworks.reference if name == "torch" else frameworks.candidate

    def global_hook_program(kind):
        return {"seed": 0, "x_requires_grad": True, "model": [{"kind": "linear", "name": "b0"}],
                "steps": [{"k": "hook", "kind": kind, "on": "global", "label": "h0"}, {"k": "forward"},
                          {"k": "roots", "how": "sum"}, {"k": "backward"}]}

    # a global legacy backward hook, once registered, makes later full ones fail for the process
    legacy, full = global_hook_program("g_legacy_bw"), global_hook_program("g_bw")
    for first, second in [(legacy, full), (full, legacy)]:
        hookfuzz.interpret(T, first)
        log = hookfuzz.interpret(T, second)[0]
        assert not [e for e in log if e[0] == "raised"], log

    programs = [hookfuzz.generate(seed) for seed in range(40)]
    forward = [hookfuzz.interpret(T, p)[0] for p in programs]
    backward = [hookfuzz.interpret(T, p)[0] for p in reversed(programs)][::-1]
    for program, a, b in zip(programs, forward, backward):
        assert hookfuzz.compare(a, b) is None, hookfuzz.render(program)


def test_no_hook_on_a_view_an_in_place_block_changed_under_a_grad_mode_switch():
    """torch 2.13 crashes (segfault) on such a program (seed 41604 drew one, before the third
    stream's blocks), taking the run down: no seed may draw one."""
    risky = 0
    for seed in list(range(1000)) + [4934, 5867, 8445, 10250, 11051, 11804]:  # the last ones draw such a model
        program = hookfuzz.generate(seed)
        kinds = [b["kind"] for b in program["model"]]
        changed = {f"a_b{i}" for i in range(len(kinds) - 1)
                   if kinds[i] in hookfuzz.VIEW_OUTPUT_BLOCKS + ("reshape",)
                   and kinds[i + 1] in ("relu_inplace", "inplace_input")}
        if not changed or not any(s["k"] == "forward" and s.get("grad_ctx") for s in program["steps"]):
            continue
        risky += 1
        for s in program["steps"]:
            if s["k"] == "retain_grad" or (s["k"] == "hook" and s["kind"] in hookfuzz.TENSOR_HOOK_KINDS + ["multi"]):
                on = s.get("on")
                assert not set(on if isinstance(on, list) else [on]) & changed, (seed, s)
    assert risky, "no seed drew such a model: the check above checked nothing"


def test_ci_programs_avoid_known_divergent_features():
    for seed in CI_SEEDS:
        assert not hookfuzz.program_features(hookfuzz.generate(seed, CI_DISABLED)) & CI_DISABLED


def test_every_known_divergent_feature_is_generated_by_the_full_vocabulary():
    """A stale name in KNOWN_DIVERGENT_FEATURES would switch nothing off."""
    seen = set()
    for seed in range(3000):
        seen |= hookfuzz.program_features(hookfuzz.generate(seed))
    assert set(hookfuzz.KNOWN_DIVERGENT_FEATURES) <= seen, set(hookfuzz.KNOWN_DIVERGENT_FEATURES) - seen


def test_ci_programs_cover_the_vocabulary():
    """The CI set still registers every hook kind and runs every kind of step."""
    seen = set()
    for seed in CI_SEEDS:
        seen |= hookfuzz.program_features(hookfuzz.generate(seed, CI_DISABLED))
    kinds = (hookfuzz.MODULE_HOOK_KINDS + hookfuzz.GLOBAL_HOOK_KINDS + hookfuzz.OPT_HOOK_KINDS
             + hookfuzz.SD_HOOK_KINDS + hookfuzz.TENSOR_HOOK_KINDS)
    wanted = {f"hook:{k}" for k in kinds} | {
        "forward", "backward", "grad", "double", "inplace", "retain_grad", "step", "zero_grad", "state_dict",
        "optimizer:sgd", "optimizer:adam", "act:remove_self", "act:remove", "act:register",
        "backward:retain_graph", "grad:create_graph", "model:shared", "model:kwargs", "model:tuple", "model:seq",
        "with_kwargs:fwd", "always_call:fwd", "prepend:bw"}
    # the wider vocabulary: every block, and the calls outside programs make
    wanted |= {f"model:{kind}" for kind in hookfuzz.BLOCK_KINDS} | {
        "mode:train", "mode:eval", "requires_grad", "apply", "remove", "detach", "detach_", "retain_grad:view",
        "clip:norm", "clip:norm_inf", "clip:value", "zero_grad:module", "backward:method", "backward:grad_tensors",
        "act:register_global", "act:opt_step", "saved:save_on_cpu", "saved:disable", "saved:disable_only",
        "grad_ctx:no_grad", "grad_ctx:enable_grad", "grad_ctx:inference_mode"}
    # hooks changing the registries or the grad mode, raising, or returning what torch refuses;
    # registration and state-dict hooks; custom Functions' non-differentiable outputs
    wanted |= {"act:" + act.split(":")[0] for act in hookfuzz.REGISTRY_ACTS} | {
        f"ret:{kind}:{ret}" for kind, rets in hookfuzz.RETURNS.items() for ret in rets
        if ret in ("raise_once", "wrong_shape", "wrong_dtype", "wrong_len", "non_tensor")} | {
        "saved:raise_pack", "saved:raise_unpack", "saved:raise_unpack_once", "forward:ctx_hook", "remove:twice",
        "retain_grad:view_of_activation", "depth:node_pre", "depth:node_post", "registration_hook:replace",
        "state_dict:module"} | {f"registration_hook:{w}" for w in hookfuzz.REGISTRATION_KINDS} | {
        f"grow:{w}" for w in hookfuzz.REGISTRATION_KINDS} | {
        f"state_dict:{v}" for v in ("missing", "missing_strict", "unexpected", "unexpected_strict", "prefix", "assign")}
    # the later vocabulary (second random stream): nested and shared modules, hooks that run a pass of
    # their own, odd gradients, nested or odd saved-tensor hooks, .grad by hand, saved attributes,
    # the optimizer's state-dict hooks (autograd.grad with batched gradients meets no hook in the CI
    # set: its own differential test covers it)
    wanted |= {f"model:{kind}" for kind in hookfuzz.EXTRA_BLOCK_KINDS} | {
        "act:" + act for act in hookfuzz.REENTRANT_ACTS} | {
        "saved:" + mode for mode in hookfuzz.EXTRA_SAVED if "saved:" + mode not in CI_DISABLED} | {
        "grad_outputs:" + how for how in hookfuzz.ODD_GRAD_OUTPUTS} | {
        "set_grad:" + how for how in hookfuzz.SET_GRAD_HOW} | {
        f"hook:{kind}" for kind in hookfuzz.OPT_SD_HOOK_KINDS} | {
        "grad:materialize_grads", "saved_attr", "saved_attr:depth", "opt_state_dict", "opt_state_dict:load",
        "prepend:bw_pre", "ret:opt_sd_post:replace", "ret:opt_load_pre:drop_key"}
    # the third stream: more layers, global hook dicts cleared by hand (also from inside a hook),
    # blocks rebuilt, lr schedulers, requires_grad switched back on, autograd.grad's only_inputs,
    # the model deep-copied with its hooks, functional_call, parametrize.cached()
    wanted |= {f"model:{kind}" for kind in hookfuzz.MORE_BLOCK_KINDS} | {
        f"sched:{kind}" for kind in hookfuzz.SCHEDULERS} | {
        "clear_globals", "rebuild", "requires_grad:back", "grad:only_inputs", "act:clear_globals", "deepcopy",
        "functional_call", "forward:cached"}
    # the fourth and fifth streams: a Tensor subclass input (its __torch_function__ logging inside passes),
    # saved_tensors_hooks around a pass
    wanted |= {"x_subclass", "backward:saved_ctx:log", "grad:saved_ctx:clone", "backward:saved_ctx:raise_pack"}
    assert wanted <= seen, wanted - seen


def test_comparison_uses_a_float_tolerance_and_sees_every_other_difference():
    a = [("hook", "h0", ("T", "float64", (2,), [1.0, 2.0], False))]
    assert hookfuzz.compare(a, [("hook", "h0", ("T", "float64", (2,), [1.0, 2.0 + 1e-12], False))]) is None
    assert hookfuzz.compare(a, [("hook", "h0", ("T", "float64", (2,), [1.0, 2.001], False))]) == (0, a[0], (
        "hook", "h0", ("T", "float64", (2,), [1.0, 2.001], False)))
    assert hookfuzz.compare(a, [("hook", "h0", ("T", "float64", (2,), [1.0, 2.0], True))]) is not None
    assert hookfuzz.compare(a, a + [("hook", "h1", None)]) == (1, None, ("hook", "h1", None))
    assert hookfuzz.compare([("ok", True)], [("ok", 1)]) is not None
    # parameters after optimizer steps: rounding noise amplified by Adam passes, a step's worth does not
    p = [("param", "b0.bias", ("T", "float64", (2,), [0.67, 0.21], False))]
    assert hookfuzz.compare(p, [("param", "b0.bias", ("T", "float64", (2,), [0.67, 0.21 + 2e-6], False))]) is None
    assert hookfuzz.compare(p, [("param", "b0.bias", ("T", "float64", (2,), [0.67, 0.22], False))]) is not None
    assert hookfuzz.compare([("hook", "h0", 0.21)], [("hook", "h0", 0.21 + 2e-6)]) is not None


def _first_divergence(frameworks, seeds):
    for seed in seeds:
        program = hookfuzz.generate(seed, CI_DISABLED)
        if frameworks.check(program)[0] is not None:
            return program
    return None


def test_a_dropped_tensor_hook_return_value_is_found_and_shrunk(frameworks, monkeypatch):
    """Break hookgrad on purpose (tensor hooks' replacement gradients ignored): the fuzzer must
    notice on the CI seeds and shrink to a few steps that still register a replacing tensor hook."""
    original = hookgrad.Tensor.register_hook

    def register_hook_ignoring_result(self, hook):
        return original(self, lambda grad: hook(grad) and None)

    monkeypatch.setattr(hookgrad.Tensor, "register_hook", register_hook_ignoring_result)
    program = _first_divergence(frameworks, CI_SEEDS)
    assert program is not None, "the fuzzer missed a broken tensor-hook dispatch"
    small = hookfuzz.shrink(frameworks, program)
    assert frameworks.check(small)[0] is not None
    assert len(small["steps"]) <= 5 and len(small["steps"]) < len(program["steps"]), hookfuzz.render(small)
    assert any(s["k"] == "hook" and s["kind"] == "tensor" and s.get("ret", "none") != "none"
               for s in small["steps"]), hookfuzz.render(small)


def test_an_ignored_prepend_is_found_and_shrunk(frameworks, monkeypatch):
    """Break hookgrad on purpose (forward hooks registered with prepend=True go last)."""
    original = hookgrad.nn.Module.register_forward_hook

    def register_forward_hook_appending(self, hook, *, prepend=False, **kwargs):
        return original(self, hook, **kwargs)

    monkeypatch.setattr(hookgrad.nn.Module, "register_forward_hook", register_forward_hook_appending)
    program = _first_divergence(frameworks, CI_SEEDS)
    assert program is not None, "the fuzzer missed an ignored prepend"
    small = hookfuzz.shrink(frameworks, program)
    assert any(s.get("prepend") and s["kind"] == "fwd" for s in small["steps"] if s["k"] == "hook"), \
        hookfuzz.render(small)
    assert len(small["steps"]) <= 4, hookfuzz.render(small)


def test_a_wrong_gradient_is_found(frameworks, monkeypatch):
    """Break hookgrad on purpose (Linear's weight gradient off by a factor): caught in final .grad values."""
    original = hookgrad.nn.Linear.forward

    def forward_scaling_weight_grad(self, x):
        out = original(self, x)
        if self.weight.requires_grad and hookgrad.is_grad_enabled():
            self.weight.register_hook(lambda g: g * 1.01) if not getattr(self, "_broken", False) else None
            self._broken = True
        return out

    monkeypatch.setattr(hookgrad.nn.Linear, "forward", forward_scaling_weight_grad)
    program = _first_divergence(frameworks, range(50))
    assert program is not None
    small = hookfuzz.shrink(frameworks, program)
    assert len(small["steps"]) <= 4, hookfuzz.render(small)


def test_a_hanging_program_times_out_on_its_own(monkeypatch):
    def run_forever(self):
        while True:
            time.sleep(0.01)

    monkeypatch.setattr(hookfuzz.Interpreter, "run", run_forever)
    start = time.perf_counter()
    log, _ = hookfuzz.interpret(hookgrad, hookfuzz.generate(0), timeout=0.2)
    assert log[-1] == ("timeout",) and time.perf_counter() - start < 2

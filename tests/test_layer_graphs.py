"""Layers and functionals record torch's backward nodes: the grad_fn class names along the graph,
the next_functions structure, the output node's ``_saved_*`` attribute names, and what a hook on
the output's grad_fn receives (shapes, None entries, values)."""
import numpy as np
import pytest

from difftest import differential


def _arr(*shape, seed=0, low=None, high=None):
    rng = np.random.default_rng(seed)
    a = rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)
    return a.astype(np.float32)


def _walk(node, depth=0, seen=None, out=None):
    """Each reached node as (class name, next node class names), depth first, each node once."""
    if out is None:
        out, seen = [], set()
    if node is None or depth > 6 or id(node) in seen:
        return out
    seen.add(id(node))
    out.append((type(node).__name__, [type(f).__name__ if f is not None else None for f, _ in node.next_functions]))
    for f, _ in node.next_functions:
        _walk(f, depth + 1, seen, out)
    return out


def _leaf(T, *shape, seed=0, **kw):
    return T.tensor(_arr(*shape, seed=seed, **kw), requires_grad=True)


def _signs(T, *shape):
    return T.tensor(np.sign(_arr(*shape, seed=7)) + (_arr(*shape, seed=7) == 0))


# name -> fn(T) returning (output, leaves whose gradients are compared)
def _act(name, *shape, **kw):
    def case(T):
        x = _leaf(T, *shape)
        return getattr(T.nn.functional, name)(x * 3, **kw), [x]
    return case


def _prelu(T, wshape, xshape):
    x, w = _leaf(T, *xshape), _leaf(T, *wshape, seed=1)
    return T.nn.functional.prelu(x, w), [x, w]


def _rrelu_train(T):
    T.manual_seed(0)
    x = _leaf(T, 3, 5)
    return T.nn.functional.rrelu(x, training=True), [x]


def _inplace(name, **kw):
    def case(T):
        x = _leaf(T, 3, 4)
        return getattr(T.nn.functional, name)(x * 3, inplace=True, **kw), [x]
    return case


def _loss(name, target, *shape, **kw):
    def case(T):
        x = _leaf(T, *shape)
        return getattr(T.nn.functional, name)(x, target(T), **kw), [x]
    return case


def _module(build, *shape):
    def case(T):
        x = _leaf(T, *shape)
        return build(T.nn)(x), [x]
    return case


def _interp(shape, **kw):
    def case(T):
        x = _leaf(T, *shape)
        return T.nn.functional.interpolate(x, **kw), [x]
    return case


CASES = {
    # activations
    "glu": _act("glu", 2, 4),
    "glu_dim0": _act("glu", 4, 3, dim=0),
    "prelu_shared": lambda T: _prelu(T, (1,), (2, 3, 4)),
    "prelu_channels": lambda T: _prelu(T, (3,), (2, 3, 4)),
    "prelu_2d": lambda T: _prelu(T, (4,), (2, 4)),
    "rrelu_eval": _act("rrelu", 3, 5),
    "rrelu_train": _rrelu_train,
    "threshold": _act("threshold", 3, 5, threshold=0.1, value=2.0),
    "threshold_inplace": _inplace("threshold", threshold=0.1, value=-2.0),
    "mish": _act("mish", 3, 5),
    "hardswish": _act("hardswish", 3, 5),
    "hardsigmoid": _act("hardsigmoid", 3, 5),
    "logsigmoid": _act("logsigmoid", 3, 5),
    "hardshrink": _act("hardshrink", 3, 5, lambd=0.7),
    "softshrink": _act("softshrink", 3, 5, lambd=0.7),
    # pixel shuffle
    "pixel_shuffle": lambda T: (lambda x: (T.nn.functional.pixel_shuffle(x, 2), [x]))(_leaf(T, 1, 8, 3, 3)),
    "pixel_unshuffle": lambda T: (lambda x: (T.nn.functional.pixel_unshuffle(x, 2), [x]))(_leaf(T, 2, 2, 4, 6)),
    # losses
    "soft_margin_loss": _loss("soft_margin_loss", lambda T: _signs(T, 3, 4), 3, 4),
    "soft_margin_loss_none": _loss("soft_margin_loss", lambda T: _signs(T, 3, 4), 3, 4, reduction="none"),
    "multi_margin_loss": _loss("multi_margin_loss", lambda T: T.tensor([0, 1, 3]), 3, 4),
    "multi_margin_loss_p2": _loss("multi_margin_loss", lambda T: T.tensor([0, 1, 3]), 3, 4, p=2, margin=0.5,
                                  weight=None, reduction="sum"),
    "multilabel_margin_loss": _loss("multilabel_margin_loss", lambda T: T.tensor([[0, 1, -1, 0], [3, -1, 1, 1],
                                                                                  [2, 2, 2, 2]]), 3, 4),
    # pools
    "max_pool3d": _module(lambda nn: nn.MaxPool3d(2), 2, 2, 4, 4, 4),
    "avg_pool3d": _module(lambda nn: nn.AvgPool3d(2), 2, 2, 4, 4, 4),
    "adaptive_max_pool2d": _module(lambda nn: nn.AdaptiveMaxPool2d(3), 2, 2, 7, 7),
    "adaptive_avg_pool3d": _module(lambda nn: nn.AdaptiveAvgPool3d(2), 2, 2, 5, 5, 5),
    # interpolate
    "upsample_nearest1d": _interp((1, 2, 3), scale_factor=2),
    "upsample_nearest2d": _interp((1, 2, 3, 3), scale_factor=2),
    "upsample_nearest3d": _interp((1, 2, 3, 3, 2), size=(4, 5, 3)),
    "upsample_linear1d": _interp((1, 2, 3), scale_factor=2, mode="linear"),
    "upsample_bilinear2d": _interp((1, 2, 3, 3), scale_factor=2, mode="bilinear"),
    "upsample_bilinear2d_corners": _interp((1, 2, 3, 4), size=(5, 7), mode="bilinear", align_corners=True),
    "upsample_trilinear3d": _interp((1, 2, 3, 3, 3), scale_factor=2, mode="trilinear"),
    "upsample_bicubic2d": _interp((1, 2, 3, 3), scale_factor=2, mode="bicubic"),
    "upsample_bicubic2d_corners": _interp((1, 2, 3, 4), size=(5, 7), mode="bicubic", align_corners=True),
    # fold, bilinear
    "fold": _module(lambda nn: nn.Fold((4, 4), 2), 1, 8, 9),
    "unfold": _module(lambda nn: nn.Unfold(2), 1, 2, 4, 4),
    "unfold_strided": _module(lambda nn: nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), 2, 3, 5, 6),
    "fold_overlapping": _module(lambda nn: nn.Fold((5, 4), (2, 3), padding=(1, 0), stride=(1, 2)), 3, 12, 6),
    "unfold_unbatched": _module(lambda nn: nn.Unfold(2), 2, 4, 3),
    "bilinear": lambda T: (lambda a, b, w, c: (T.nn.functional.bilinear(a, b, w, c), [a, b, w, c]))(
        _leaf(T, 5, 2), _leaf(T, 5, 3, seed=1), _leaf(T, 4, 2, 3, seed=2), _leaf(T, 4, seed=3)),
    "bilinear_unbatched": lambda T: (lambda a, b, w: (T.nn.functional.bilinear(a[0], b[0], w), [a, b, w]))(
        _leaf(T, 5, 2), _leaf(T, 5, 3, seed=1), _leaf(T, 4, 2, 3, seed=2)),
    "bilinear_3d": lambda T: (lambda a, b, w: (T.nn.functional.bilinear(a, b, w), [a, b, w]))(
        _leaf(T, 2, 3, 2), _leaf(T, 2, 3, 3, seed=1), _leaf(T, 4, 2, 3, seed=2)),
    "local_response_norm_3d": _module(lambda nn: nn.LocalResponseNorm(3), 2, 5, 4),
    "local_response_norm_4d": _module(lambda nn: nn.LocalResponseNorm(2, alpha=0.01, beta=0.5, k=2.0), 2, 4, 3, 3),
    "cosine_similarity": lambda T: (lambda a: (T.nn.functional.cosine_similarity(a, T.tensor(_arr(3, 4, seed=4))),
                                               [a]))(_leaf(T, 3, 4)),
    "adaptive_max_pool1d": _module(lambda nn: nn.AdaptiveMaxPool1d(3), 2, 2, 7),
    "circular_pad2d": _module(lambda nn: nn.CircularPad2d(1), 1, 2, 3, 3),
    # composites whose C++ calls the Scalar overloads
    "rms_norm": lambda T: (lambda x: (T.nn.functional.rms_norm(x, (5,)), [x]))(_leaf(T, 3, 4, 5)),
    "hinge_embedding_loss": _loss("hinge_embedding_loss", lambda T: _signs(T, 3), 3),
    "margin_ranking_loss": lambda T: (lambda a: (T.nn.functional.margin_ranking_loss(
        a, T.tensor(_arr(3, seed=2)), _signs(T, 3)), [a]))(_leaf(T, 3)),
    "cross_entropy_label_smoothing": _loss("cross_entropy", lambda T: T.tensor([0, 1, 2]), 3, 4,
                                           label_smoothing=0.1),
    "cross_entropy_probs": _loss("cross_entropy", lambda T: T.tensor(_arr(3, 4, seed=3, low=0, high=1)), 3, 4),
    "cosine_embedding_loss": lambda T: (lambda a: (T.nn.functional.cosine_embedding_loss(
        a, T.tensor(_arr(3, 4, seed=5)), _signs(T, 3), margin=0.2), [a]))(_leaf(T, 3, 4)),
    "triplet_margin_loss": lambda T: (lambda a: (T.nn.functional.triplet_margin_loss(
        a, T.tensor(_arr(3, 4, seed=5)), T.tensor(_arr(3, 4, seed=6)), p=1.5), [a]))(_leaf(T, 3, 4)),
    "clamp_min_max": lambda T: (lambda a: (a.clamp_min(-0.5).clamp_max(0.5), [a]))(_leaf(T, 3, 4)),
    "pairwise_distance": lambda T: (lambda a: (T.nn.functional.pairwise_distance(a, T.tensor(_arr(2, 3, seed=4))),
                                               [a]))(_leaf(T, 2, 3)),
}

# cases that do not match torch yet: name -> why (strict xfails)
PENDING = {
}


def _record(T, case):
    out, leaves = case(T)
    node = out.grad_fn
    heard = []
    node.register_hook(lambda grad_inputs, grad_outputs: heard.append((list(grad_inputs), list(grad_outputs))))
    upstream = T.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(np.float32))
    out.backward(upstream)
    return {
        "graph": _walk(node),
        "saved": sorted(a for a in dir(node) if a.startswith("_saved")),
        "hook": heard,
        "grads": [x.grad for x in leaves],
    }


def _params():
    return [pytest.param(name, marks=pytest.mark.xfail(reason=PENDING[name], strict=True)) if name in PENDING
            else name for name in CASES]


@pytest.mark.parametrize("name", _params())
@differential(rtol=1e-4, atol=1e-5)
def test_layer_graph(T, name):
    return _record(T, CASES[name])

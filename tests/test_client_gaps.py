"""Behaviours that real client libraries (tests/test_clients.py) rely on, each checked against torch on
its own: what they found missing or different, as differential scenarios."""
from __future__ import annotations

import contextlib

from difftest import catch, differential, warns

# public names that FLOP counters (ptflops, thop's fx profile) and tracers replace for a while
PATCHED_TORCH = ("add", "mul", "matmul", "mm", "bmm", "addmm", "baddbmm", "softmax")
PATCHED_METHODS = ("add", "mul", "matmul", "mm", "bmm", "addmm")
PATCHED_FUNCTIONAL = ("linear", "softmax", "relu", "gelu", "dropout", "layer_norm")


@contextlib.contextmanager
def recording_calls(T, calls):
    """Replace the public names above with recorders while the block runs, then put them back."""
    F = T.nn.functional
    saved = []
    for owner, label, names in ((T, "torch", PATCHED_TORCH), (T.Tensor, "Tensor", PATCHED_METHODS),
                                (F, "F", PATCHED_FUNCTIONAL)):
        for name in names:
            original = getattr(owner, name)
            saved.append((owner, name, original))

            def recorder(*args, _original=original, _name=f"{label}.{name}", **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)
            setattr(owner, name, recorder)
    try:
        yield calls
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _calls_of(T, fn):
    calls = []
    with recording_calls(T, calls):
        out = fn()
    return calls, out


@differential
def test_recurrent_layers_do_not_call_patched_public_ops(T):
    T.manual_seed(0)
    x = T.randn(3, 4, 5)
    layers = [T.nn.LSTM(5, 6), T.nn.LSTM(5, 6, num_layers=2, bidirectional=True, proj_size=3), T.nn.GRU(5, 4),
              T.nn.GRU(5, 4, bias=False), T.nn.RNN(5, 4, nonlinearity="relu")]
    results = [_calls_of(T, lambda layer=layer: layer(x)[0]) for layer in layers]
    cells = [T.nn.LSTMCell(5, 3), T.nn.GRUCell(5, 3), T.nn.RNNCell(5, 3, bias=False)]
    results += [_calls_of(T, lambda cell=cell: cell(x[0])) for cell in cells]
    return results


@differential
def test_multihead_attention_calls_what_torch_calls(T):
    T.manual_seed(0)
    attention = T.nn.MultiheadAttention(8, 2)
    q, kv = T.randn(4, 2, 8), T.randn(5, 2, 8)
    mask = T.zeros(4, 5, dtype=T.bool)
    mask[0, 1] = True
    return [_calls_of(T, lambda: attention(q, q, q)),
            _calls_of(T, lambda: attention(q, kv, kv, attn_mask=mask)),
            _calls_of(T, lambda: attention(q, kv, kv, need_weights=False)[0]),
            _calls_of(T, lambda: attention(q, kv, kv, attn_mask=mask, need_weights=False)[0])]


@differential
def test_fused_functionals_do_not_call_patched_public_ops(T):
    T.manual_seed(0)
    F = T.nn.functional
    theta = T.randn(2, 2, 3)
    x = T.randn(2, 3, 4)
    return [_calls_of(T, lambda: F.affine_grid(theta, [2, 1, 3, 4], align_corners=False)),
            _calls_of(T, lambda: F.rms_norm(x, [4], eps=1e-6)),
            _calls_of(T, lambda: F.alpha_dropout(x, 0.5, training=True).shape)]


@differential
def test_aten_convolution_with_backend_flags(T):
    aten = T.ops.aten
    image = T.linspace(-1, 1, 2 * 2 * 5 * 5).reshape(2, 2, 5, 5)
    weight = T.linspace(-1, 1, 3 * 2 * 3 * 3).reshape(3, 2, 3, 3)
    bias = T.tensor([0.5, -1.0, 2.0])
    weight_t = T.linspace(-1, 1, 2 * 3 * 2 * 2).reshape(2, 3, 2, 2)
    signal = T.linspace(-1, 1, 1 * 4 * 7).reshape(1, 4, 7)
    return (aten._convolution(image, weight, bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, False, False, True, True),
            aten._convolution.default(image, weight, None, [2, 1], [0, 1], [1, 2], False, [0, 0], 1,
                                      False, True, False, False),
            aten._convolution(image, weight_t, None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1,
                              False, False, True, True),
            aten._convolution(signal, T.ones(4, 2, 3), None, [1], [1], [1], False, [0], 2, False, False, True, True),
            catch(aten._convolution, image, T.ones(3, 5, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                  False, False, True, True))


@differential
def test_randint_like_forms(T):
    x = T.zeros(40, 30)
    T.manual_seed(0)
    drawn = [T.randint_like(x, high=2), T.randint_like(x, 3), T.randint_like(x, 2, 5), T.randint_like(x, low=1, high=4),
             T.randint_like(x, 1, high=3), T.randint_like(x, high=2, dtype=T.float64),
             T.randint_like(x, 7, dtype=T.int64), T.randint_like(x[0], high=9, generator=T.Generator().manual_seed(3))]
    refused = [catch(T.randint_like, x), catch(T.randint_like, x, low=2), catch(T.randint_like, x, 2, low=1),
               catch(T.randint_like, x, 1, 2, 3), catch(T.randint_like, x, 3, 3)]
    return drawn, refused, T.randint(high=9, size=(4,)), T.randint(low=2, high=5, size=(6,))


@differential
def test_vmap_nested_in_dims(T):
    vmap = T.func.vmap
    x, y = T.arange(6.0).reshape(3, 2), T.arange(6.0).reshape(2, 3)

    def f(pair, named):
        return pair[0] * named["x"] + pair[1]

    def add_pair(pair):
        return pair[0] + pair[1]

    grads = vmap(T.func.grad(lambda w, xy: ((xy[0] * w).sum() - xy[1]) ** 2), in_dims=(None, (0, 0)))(
        T.tensor([0.5, -1.0]), (x, T.tensor([1.0, 2.0, 3.0])))
    return (vmap(f, in_dims=((0, 1), {"x": None}))((x, y), {"x": T.tensor(2.0)}),
            vmap(f, in_dims=((0, 1), None))((x, y), {"x": T.tensor(2.0)}),
            vmap(f, in_dims=((0, 1), 0))((x, y), {"x": T.arange(3.0)}),
            vmap(add_pair, in_dims=((0, None),))((x, 5)), vmap(lambda a, n: a * n, in_dims=(0, None))(x, 3), grads,
            catch(vmap(f, in_dims=[(0, 1), None]), (x, y), {"x": T.tensor(2.0)}),
            catch(vmap(f, in_dims=((0, 1, 0), None)), (x, y), {"x": T.tensor(2.0)}),
            catch(vmap(f, in_dims=([0, 1], None)), (x, y), {"x": T.tensor(2.0)}),
            catch(vmap(f, in_dims=((0, 1), {"y": None})), (x, y), {"x": T.tensor(2.0)}),
            catch(vmap(lambda a, n: a * n, in_dims=(0, 0)), x, 3), catch(vmap(add_pair, in_dims=((0, 0),)), (x, 5)),
            catch(vmap(add_pair, in_dims=0), (x, 5)))


@differential
def test_function_transforms_under_no_grad(T):
    func = T.func
    w = T.nn.Parameter(T.tensor([1.0, 2.0]))
    x = T.tensor([0.5, -1.0])

    def f(p):
        return (p * x).sin()

    def record(*tensors):
        return [(t.detach(), t.requires_grad) for t in tensors]

    results = []
    out, pull = func.vjp(f, w)
    results += [record(out, *pull(T.ones(2)))]
    out, pull = func.vjp(f, x)
    results += [record(out, *pull(T.ones(2)))]
    with T.no_grad():
        out, pull = func.vjp(f, w)
        results += [record(out, *pull(T.ones(2)))]
        results += [record(*func.jvp(f, (w,), (T.ones(2),))), record(func.grad(lambda p: f(p).sum())(w)),
                    record(func.jacrev(f)(w)), record(func.hessian(lambda p: (p ** 3).sum())(w)),
                    record(func.jvp(func.jacrev(lambda p: (p ** 3).sum()), (w,), (T.ones(2),))[1])]
        # a GGN-vector product as curvature libraries write it: jvp, then the loss Hessian, then vjp
        _, jv = func.jvp(f, (w,), (T.tensor([1.0, -1.0]),))
        _, hjv = func.jvp(func.jacrev(lambda y: (y ** 2).sum() / 2), (f(w),), (jv,))
        _, pull = func.vjp(f, w)
        results += [record(*pull(hjv))]
    results += [record(*func.jvp(f, (w,), (T.ones(2),))), record(func.grad(lambda p: f(p).sum())(w))]
    return results


@differential
def test_out_argument_writes_in_place(T):
    a = T.tensor([[1.0, -2.0], [3.0, 0.5]])
    b = T.tensor([[0.5, 2.0], [-1.0, 4.0]])

    def into(fn, out):
        returned = fn(out)
        return returned is out, out

    base = T.zeros(3, 2)
    row_view = base[1]
    results = [
        into(lambda o: T.sum(a, -2, keepdim=True, out=o), T.empty(1, 2)),
        into(lambda o: T.sum(a, dim=1, out=o), T.empty(0)),
        into(lambda o: T.mean(a, 0, out=o), T.empty(2)), into(lambda o: T.prod(a, 1, out=o), T.empty(2)),
        into(lambda o: T.amax(a, 1, out=o), T.empty(2)), into(lambda o: T.norm(a, 2, dim=-2, keepdim=True, out=o),
                                                             T.empty(1, 2)),
        into(lambda o: T.logsumexp(a, 1, out=o), T.empty(2)), into(lambda o: T.cumsum(a, 1, out=o), T.empty(2, 2)),
        into(lambda o: T.var(a, 1, out=o), T.empty(2)), into(lambda o: T.mul(a, b, out=o), T.empty(2, 2)),
        into(lambda o: T.div(a, b, out=o), T.empty(2, 2)), into(lambda o: T.add(a, b, alpha=2, out=o), T.empty(2, 2)),
        into(lambda o: T.lt(a, 1.0, out=o), T.empty(2, 2, dtype=T.bool)),
        into(lambda o: T.reciprocal(a, out=o), T.empty(2, 2)),
        into(lambda o: T.addcmul(a, b, a, value=-1, out=o), T.empty(2, 2)),
        into(lambda o: T.matmul(a, b, out=o), T.empty(2, 2)), into(lambda o: T.where(a > 0, a, b, out=o), T.empty(2, 2)),
        into(lambda o: T.clamp(a, -1, 1, out=o), T.empty(2, 2)),
        into(lambda o: T.cat([a, b], out=o), T.empty(4, 2)), into(lambda o: T.sqrt(a.abs(), out=o), T.empty(2, 2)),
        into(lambda o: T.sum(a, 0, out=o), row_view), base,                      # written through a view
        into(lambda o: T.mul(a, b, out=o), T.empty(2, 2, dtype=T.float64)),       # cast to out's dtype
        into(lambda o: T.sum(a, 1, out=o), T.empty(2, dtype=T.float64)),
    ]
    values, indices = T.empty(2), T.empty(2, dtype=T.long)
    returned = T.max(a, 1, out=(values, indices))
    results += [returned[0] is values, returned[1] is indices, values, indices]
    w = T.ones(2, requires_grad=True)
    # which out dtypes each op takes: sum casts to any, mean needs a castable one, amax the same, all bool
    by_dtype = [catch(fn, a, 1, out=T.empty(2, dtype=dtype)) for fn in (T.sum, T.prod, T.mean, T.amax, T.all, T.var)
                for dtype in (T.long, T.float64, T.bool)]
    refused = [by_dtype, catch(T.mul, a, b, out=T.empty(2, 2, dtype=T.long)),
               catch(T.cat, [a, b], out=T.empty(4, 2, dtype=T.long)), catch(T.where, a > 0, a, b, out=T.empty(2, 2, dtype=T.float64)),
               catch(T.sum, w * 2, 0, out=T.empty(())), catch(T.mul, w, 2.0, out=T.empty(2)),
               catch(T.sum, a, 1, out=[1.0, 2.0])]
    with T.no_grad():
        allowed = T.mul(w, 2.0, out=T.empty(2))
    return results, refused, allowed, warns(T.sum, a, 1, out=T.empty(5))


@differential
def test_vmap_randomness(T):
    vmap = T.func.vmap
    generator = T.Generator().manual_seed(0)
    same_with_generator = vmap(lambda x, g: x + T.randn((), generator=g), in_dims=(0, None), randomness="same")(
        T.zeros(3), generator)
    after = T.randn((), generator=generator)
    T.manual_seed(0)
    same_global = vmap(lambda x: x + T.randn(2), randomness="same")(T.zeros(3, 2))
    return (same_with_generator, after, same_global, T.randn(()), catch(vmap(lambda x: x + T.randn(())), T.ones(3)),
            catch(vmap, lambda x: x, randomness="bad"), vmap(lambda x: x * 2)(T.ones(2)))


def _message(fn):
    """The exception class and message ``fn`` raised (convolution argument errors are matched by text)."""
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - recording it is the point
        return type(exc).__name__, str(exc)
    return "ok", out


@differential
def test_convolution_argument_errors(T):
    """BackPACK's pooling derivatives hand convolutions a float32 weight with float64 inputs: torch's
    messages and their order; bad strides, paddings, dilations and groups raise instead of computing."""
    F = T.nn.functional
    found = []
    for nd, conv, transposed_conv in ((1, F.conv1d, F.conv_transpose1d), (2, F.conv2d, F.conv_transpose2d),
                                      (3, F.conv3d, F.conv_transpose3d)):
        x, w = T.ones(1, 2, *[3] * nd), T.ones(2, 2, *[2] * nd)
        bad = [dict(stride=0), dict(stride=-1), dict(padding=-1), dict(dilation=0), dict(dilation=-1),
               dict(groups=0), dict(stride=(1,) * (nd + 1)), dict(padding=(1,) * (nd + 1)),
               dict(bias=T.ones(3)), dict(bias=T.ones(2, dtype=T.float64)), dict(stride=0, padding=-1),
               dict(groups=0, bias=T.ones(2, dtype=T.float64)), dict(dilation=0, bias=T.ones(5))]
        for fn in (conv, transposed_conv):
            for kwargs in bad + ([dict(output_padding=-1), dict(output_padding=(0,) * (nd + 1))]
                                 if fn is transposed_conv else []):
                found.append(_message(lambda: fn(x, w, **kwargs)))
            found.append(_message(lambda: fn(x, w.double())))
            found.append(_message(lambda: fn(x.double(), w)))
            found.append(_message(lambda: fn(T.ones(1, 3, *[3] * nd), w.double())))
            found.append(_message(lambda: fn(x.to(T.bfloat16), w)))
            found.append(_message(lambda: fn(x.to(T.float16), w)))
    return found


@differential
def test_transposed_convolution_bias_of_another_dtype(T):
    """A 1-d or 2-d transposed convolution takes a bias of another dtype: the result keeps the input's
    dtype and the bias's gradient comes back in the bias's."""
    F = T.nn.functional
    found = []
    for fn, nd in ((F.conv_transpose1d, 1), (F.conv_transpose2d, 2)):
        x = T.linspace(-1, 1, 2 * 3 ** nd).reshape(1, 2, *[3] * nd).requires_grad_()
        w = T.linspace(0.5, -0.5, 4 * 2 ** nd).reshape(2, 2, *[2] * nd).requires_grad_()
        b = T.tensor([0.25, -1.5], dtype=T.float64, requires_grad=True)
        y = fn(x, w, b, stride=2)
        (y * y).sum().backward()
        found.append((y, y.grad_fn.name(), x.grad, w.grad, b.grad))
    return found


@differential
def test_einsum_and_tensordot_operand_dtypes(T):
    """BackPACK's KFRA contracts a float64 matrix with a float32 weight: torch's einsum refuses operands of
    different dtypes wherever a pair has indices to sum (its bmm path) and promotes them in outer and
    elementwise products; tensordot always wants one dtype."""
    f64, f32, i64 = (dict(dtype=T.float64), dict(dtype=T.float32), dict(dtype=T.int64))
    cases = [("ik,kj->ij", [((2, 3), f64), ((3, 4), f32)]), ("ik,kj->ij", [((2, 3), f32), ((3, 4), f64)]),
             ("i,i->", [((3,), f32), ((3,), f64)]), ("ik,kj,jl->il", [((2, 3), f64), ((3, 4), f32), ((4, 2), f64)]),
             ("ik,kj->ij", [((2, 3), f64), ((3, 4), i64)]), ("i,j->ij", [((2,), f32), ((3,), dict(dtype=T.float16))]),
             ("ij,ij->ij", [((2, 3), f64), ((2, 3), f32)]), ("i,i->i", [((2,), i64), ((2,), f32)]),
             ("i,j,j->i", [((2,), i64), ((3,), f32), ((3,), f64)]), ("i,j,j->i", [((2,), i64), ((3,), f32), ((3,), f32)]),
             ("ij,j->i", [((2, 3), dict(dtype=T.bfloat16)), ((3,), dict(dtype=T.float16))]),
             ("bij,bjk->bik", [((2, 2, 3), f32), ((2, 3, 2), f32)])]
    found = [catch(lambda: T.einsum(eq, *[T.ones(*shape, **kind) for shape, kind in ops])) for eq, ops in cases]
    found.append(_message(lambda: T.einsum("ik,kj->ij", T.ones(2, 3, **f64), T.ones(3, 4))))
    found.append(_message(lambda: T.tensordot(T.ones(2, 3), T.ones(3, 2, **f64), 1)))
    found.append(_message(lambda: T.tensordot(T.ones(2), T.ones(3, **f64), 0)))
    return found


@differential
def test_storage_sizes_and_construction(T):
    """torchinfo's "Input size (MB)" sums sys.getsizeof of the inputs' storages: the bytes plus the
    object, as torch reports them; a storage built from a byte count or from byte values."""
    import sys
    import warnings
    x = T.zeros(2, 3, 8, 8, dtype=T.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage's deprecation
        typed = [sys.getsizeof(x.storage()), sys.getsizeof(T.ones(3, dtype=T.int8).storage())]
    made = T.UntypedStorage(10)
    return (sys.getsizeof(x.untyped_storage()), sys.getsizeof(x[1].untyped_storage()),
            sys.getsizeof(T.zeros(0).untyped_storage()), typed, sys.getsizeof(made), made.nbytes(), len(made),
            list(T.UntypedStorage([1, 2, 255])), T.UntypedStorage().nbytes())

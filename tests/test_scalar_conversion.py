"""Converting tensors to Python scalars: which conversions warn about requires_grad, and errors."""
import warnings

from difftest import catch, differential


def _messages(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message).split(" (Triggered internally")[0] for w in caught]


@differential
def test_only_float_and_complex_warn_for_a_tensor_that_requires_grad(T):
    # torch warns once per process; warn-always makes every conversion show whether it warns
    T.set_warn_always(True)
    try:
        t = T.ones(1, requires_grad=True)
        return {name: _messages(lambda: conv(t)) for name, conv in
                [("float", float), ("complex", complex), ("int", int), ("bool", bool),
                 ("item", lambda x: x.item()), ("tolist", lambda x: x.tolist()),
                 ("float of a non-leaf", lambda x: float(x * 2)),
                 ("float without grad", lambda x: float(x.detach()))]}
    finally:
        T.set_warn_always(False)


@differential
def test_conversions_of_many_element_tensors_raise_torch_classes(T):
    two = T.ones(2)
    return [catch(lambda: float(two)), catch(lambda: int(two)), catch(lambda: complex(two)),
            catch(lambda: two.item()), catch(lambda: bool(two)), catch(lambda: float(T.ones(0)))]

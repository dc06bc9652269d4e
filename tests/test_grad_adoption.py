"""When a leaf's first gradient arrives, ``.grad`` adopts the engine's buffer instead of copying it
only if nothing else can see that buffer. The engine decides by reference counts
(``autograd.engine._is_private``); these tests pin the rule from both sides, so that a change of
the engine's call chain or of the interpreter fails here loudly: a plain backward must adopt (no
copy), and every kind of outside holder must prevent adoption (no aliasing)."""
import pytest

from difftest import differential


@pytest.fixture
def copies(monkeypatch):
    """Count the copies accumulate_into_grad makes instead of adopting."""
    from hookgrad.autograd import engine
    made = []
    real = engine._copy_like

    def counting_copy(data, like):
        made.append(data.shape)
        return real(data, like)

    monkeypatch.setattr(engine, "_copy_like", counting_copy)
    return made


CASES = {
    "mul": lambda T, a: (a * 2).sum(),
    "exp": lambda T, a: (a.exp() * 3).sum(),
    "matmul": lambda T, a: (T.ones(4, 3) @ a.reshape(3, 1)).sum(),
    "two_uses": lambda T, a: (a * 2 + a * 3).sum(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plain_backward_adopts_the_engine_buffer(copies, case):
    import hookgrad as T
    a = T.ones(3, requires_grad=True)
    CASES[case](T, a).backward()
    assert a.grad is not None
    assert copies == [], "the gradient was copied: the reference counts in engine._is_private no longer fit"


def test_transposed_fresh_product_is_adopted(copies):
    import hookgrad as T
    w = T.ones(2, 3, requires_grad=True)
    (T.ones(4, 3) @ w.t()).sum().backward()
    assert copies == [] and w.grad.is_contiguous()


HOLDERS = ["tensor_hook", "view_in_hook", "node_post_hook", "acc_pre_hook", "retain_grad", "two_leaves",
           "expanded"]


@pytest.mark.parametrize("holder", HOLDERS)
@differential
def test_an_outside_holder_prevents_adoption(T, holder):
    kept = []
    a = T.ones(3, requires_grad=True)
    if holder == "tensor_hook":
        a.register_hook(lambda g: kept.append(g))
        loss = (a * 2).sum()
    elif holder == "view_in_hook":
        a.register_hook(lambda g: kept.append(g[1:]))
        loss = (a * 2).sum()
    elif holder == "node_post_hook":
        y = a * 2
        y.grad_fn.register_hook(lambda gi, go: kept.append(gi))
        loss = y.sum()
    elif holder == "acc_pre_hook":
        y = a * 2
        y.grad_fn.next_functions[0][0].register_prehook(lambda go: kept.append(go))
        loss = y.sum()
    elif holder == "retain_grad":
        b = a.clone()
        b.retain_grad()
        kept.append(b)
        loss = (b * 2).sum()
    elif holder == "two_leaves":
        c = T.ones(3, requires_grad=True)
        kept.append(c)
        loss = (a + c).sum()
    else:
        loss = a.sum()  # the gradient is an expanded scalar: a view nobody may write through
    loss.backward()
    a.grad.add_(5)
    return a.grad, [k.grad if holder in ("retain_grad", "two_leaves") else k for k in kept]


def test_an_outside_holder_of_the_array_prevents_adoption(copies):
    # stricter than torch, which adopts here and lets the kept array change with .grad
    import hookgrad as T
    kept = []
    a = T.ones(3, requires_grad=True)
    a.register_hook(lambda g: kept.append(g.numpy()))
    (a * 2).sum().backward()
    a.grad.add_(5)
    assert kept[0].tolist() == [2.0, 2.0, 2.0] and copies == [(3,)]


def test_an_outside_holder_of_the_base_array_prevents_adoption(copies):
    # w's gradient is the transpose of a fresh product; a hook keeps the product's array
    import hookgrad as T
    kept = []
    w = T.ones(2, 3, requires_grad=True)
    w.register_hook(lambda g: kept.append(g.t().numpy()))
    (T.ones(4, 3) @ w.t()).sum().backward()
    w.grad.add_(5)
    assert kept[0].tolist() == [[4.0, 4.0], [4.0, 4.0], [4.0, 4.0]] and len(copies) == 1

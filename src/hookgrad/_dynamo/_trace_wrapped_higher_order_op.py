"""``torch._dynamo._trace_wrapped_higher_order_op``: the one name libraries take from it,
``TransformGetItemToIndex``, a function mode under which ``tensor[i, j]`` with integer and tensor indices
is an advanced-indexing gather (integers become 0-d int64 tensors), so that indices that are batched
tensors under ``vmap`` select per element instead of needing ``.item()``."""
from ..overrides import TorchFunctionMode
from ..utils import _pytree


class TransformGetItemToIndex(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        import hookgrad
        if func is hookgrad.Tensor.__getitem__:
            indexed = args[0]
            leaves = _pytree.tree_leaves(args[1])
            if all(isinstance(x, (hookgrad.Tensor, int)) for x in leaves):
                indices = tuple(hookgrad.tensor(x, dtype=hookgrad.int64) if isinstance(x, int) else x
                                for x in leaves)
                return indexed[indices]
        return func(*args, **(kwargs or {}))

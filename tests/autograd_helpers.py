"""Small helpers shared by the autograd test files."""


def node_name(node):
    """A graph node's name, the same on both frameworks (torch prefixes AccumulateGrad with its
    namespace), or None for a missing node."""
    if node is None:
        return None
    name = node.name()
    return "AccumulateGrad" if name.endswith("AccumulateGrad") else name

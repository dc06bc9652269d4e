"""``torch.distributed.checkpoint.default_planner``: DCP's load and save planners."""
from . import _NoDCP


class DefaultLoadPlanner(_NoDCP):
    pass


class DefaultSavePlanner(_NoDCP):
    pass

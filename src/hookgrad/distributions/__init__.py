"""``torch.distributions``: the distributions hook libraries draw from (Normal, Categorical,
Binomial), with sampling on hookgrad's generator, ``log_prob``, ``entropy``, moments and shapes."""
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .normal import Normal

__all__ = ["Distribution", "Normal", "Categorical", "Binomial"]

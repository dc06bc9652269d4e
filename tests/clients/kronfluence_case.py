"""kronfluence's influence functions on a float64 MLP and a small CNN: its TrackedModule wrappers
(forward hooks and tensor hooks on outputs) fit covariance, eigendecomposition and Lambda factors for
the EKFAC, KFAC, diagonal and identity strategies (empirical and sampled Fisher), then pairwise and
self-influence scores with damping, a low-rank query and aggregated queries; factors and scores are
read back from disk (safetensors)."""
import gc
import logging
import tempfile

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import TensorDataset
from kronfluence.analyzer import Analyzer, prepare_model
from kronfluence.arguments import FactorArguments, ScoreArguments
from kronfluence.task import Task

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
logging.disable(logging.WARNING)
gc.freeze()   # kronfluence collects garbage some 60 times: the imported modules' objects need no rescan
DTYPES = {"activation_covariance_dtype": torch.float64, "gradient_covariance_dtype": torch.float64,
          "eigendecomposition_dtype": torch.float64, "per_sample_gradient_dtype": torch.float64,
          "lambda_dtype": torch.float64}
SCORE_DTYPES = {"query_gradient_svd_dtype": torch.float64, "per_sample_gradient_dtype": torch.float64,
                "precondition_dtype": torch.float64, "score_dtype": torch.float64}


class Classification(Task):
    def compute_train_loss(self, batch, model, sample=False):
        inputs, labels = batch
        logits = model(inputs)
        if not sample:
            return F.cross_entropy(logits, labels, reduction="sum")
        with torch.no_grad():
            sampled = torch.multinomial(F.softmax(logits.detach(), dim=-1), num_samples=1).flatten()
        return F.cross_entropy(logits, sampled, reduction="sum")

    def compute_measurement(self, batch, model):
        inputs, labels = batch
        logits = model(inputs)
        correct = logits.gather(1, labels[:, None]).squeeze(1)
        others = logits.clone()
        others[torch.arange(len(labels)), labels] = -torch.inf
        return -(correct - others.logsumexp(-1)).sum()   # the margin, as kronfluence's examples measure


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(torch.tanh(self.conv(x)).flatten(1))


def signed(vectors):
    """Eigenvectors with each column's largest entry made positive: an eigenvector's sign is LAPACK's
    choice (torch's MKL and NumPy's may differ), the influence scores do not depend on it."""
    if vectors.dim() != 2:
        return vectors
    picks = vectors.abs().argmax(0)
    return vectors * vectors[picks, torch.arange(vectors.shape[1])].sign()


SCORE_VARIANTS = {"damped": {"damping_factor": 1e-3},
                  "low_rank": {"damping_factor": 1e-3, "query_gradient_low_rank": 2, "use_full_svd": True},
                  "aggregated": {"damping_factor": 1e-3, "aggregate_query_gradients": True}}


def run(model, train, query, strategies, directory, empirical=True):
    """``strategies``: {strategy: the score variants computed with its factors}."""
    model = prepare_model(fill(model, scale=0.4), Classification())
    analyzer = Analyzer(analysis_name="case", model=model, task=Classification(), cpu=True, disable_tqdm=True,
                        output_dir=directory)
    found = {}
    for strategy, variants in strategies.items():
        torch.manual_seed(3)   # (the sampled Fisher draws labels)
        factor_args = FactorArguments(strategy=strategy, use_empirical_fisher=empirical, **DTYPES)
        analyzer.fit_all_factors(factors_name=strategy, dataset=train, per_device_batch_size=8,
                                 factor_args=factor_args, overwrite_output_dir=True)
        factors = analyzer.load_all_factors(factors_name=strategy)
        record = {"factors": {kind: {name: signed(value) for name, value in sorted(per_module.items())}
                              for kind, per_module in sorted(factors.items())}}
        for label in variants:
            name = f"{strategy}_{label}"
            analyzer.compute_pairwise_scores(scores_name=name, factors_name=strategy, query_dataset=query,
                                             train_dataset=train, per_device_query_batch_size=3,
                                             per_device_train_batch_size=8,
                                             score_args=ScoreArguments(**SCORE_DTYPES, **SCORE_VARIANTS[label]),
                                             overwrite_output_dir=True)
            record[label] = analyzer.load_pairwise_scores(name)["all_modules"]
        if strategy == "ekfac":
            analyzer.compute_self_scores(scores_name="self", factors_name=strategy, train_dataset=train,
                                         per_device_train_batch_size=8,
                                         score_args=ScoreArguments(**SCORE_DTYPES, damping_factor=1e-3),
                                         overwrite_output_dir=True)
            record["self"] = analyzer.load_self_scores("self")["all_modules"]
        found[strategy] = record
    return found


# (more examples than a layer's inputs: the covariances are well conditioned, their eigenvectors defined)
labels = torch.tensor([0, 1, 2, 1, 0, 2, 2, 1] * 3)
train = TensorDataset(data(24, 4), labels)
query = TensorDataset(data(3, 4, seed=5), labels[:3])
images = TensorDataset(data(24, 1, 4, 4, seed=2), labels)
image_query = TensorDataset(data(3, 1, 4, 4, seed=6), labels[:3])
results = {}
with tempfile.TemporaryDirectory() as directory:
    results["mlp"] = run(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)), train, query,
                         {"ekfac": list(SCORE_VARIANTS), "kfac": ["damped"], "diagonal": ["damped"],
                          "identity": ["damped"]}, directory)
    results["mlp_sampled_fisher"] = run(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)), train, query,
                                        {"ekfac": ["damped"]}, directory, empirical=False)
    results["cnn"] = run(Conv(), images, image_query, {"ekfac": ["damped"]}, directory)
emit(results)

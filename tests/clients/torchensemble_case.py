"""TorchEnsemble's ensembles of float64 networks, each built and trained by the library from a base
module class (torch's default initialisation, seeded): fusion, voting, bagging (bootstrap samples),
gradient boosting (shrinkage, residual fitting), soft gradient boosting, snapshot ensembles (cyclic
learning rate), fast geometric ensembling and adversarial training (input gradients); predictions,
evaluation and the estimators' weights."""
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import torchensemble

from _common import data, emit

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)
x = torch.sigmoid(data(24, 4))   # (adversarial training wants inputs in [0, 1])
labels = ((x[:, 0] > 0.5).long() + (x[:, 1] > 0.6).long())
target = torch.sin(x.sum(1, keepdim=True))


class Net(nn.Module):
    def __init__(self, out=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, out))

    def forward(self, inputs):
        return self.body(inputs)


class RegressionNet(Net):
    def __init__(self):
        super().__init__(out=1)


def loader(y):
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)


ENSEMBLES = {
    "FusionClassifier": {}, "VotingClassifier": {}, "BaggingClassifier": {},
    "GradientBoostingClassifier": {"shrinkage_rate": 0.5}, "SoftGradientBoostingClassifier": {},
    "SnapshotEnsembleClassifier": {}, "AdversarialTrainingClassifier": {},
    "VotingRegressor": {}, "GradientBoostingRegressor": {}, "FastGeometricRegressor": {},
}
FIT = {"SnapshotEnsembleClassifier": {"epochs": 4}, "FastGeometricRegressor": {"epochs": 4, "cycle": 2},
       "AdversarialTrainingClassifier": {"epochs": 2, "epsilon": 0.1}}
results = {}
for name, settings in ENSEMBLES.items():
    classification = name.endswith("Classifier")
    torch.manual_seed(0)
    ensemble = getattr(torchensemble, name)(estimator=Net if classification else RegressionNet, n_estimators=2,
                                            cuda=False, **settings)
    ensemble.set_optimizer("Adam", lr=1e-2, weight_decay=1e-4)
    if name.startswith(("Voting", "Bagging")):
        ensemble.set_scheduler("StepLR", step_size=1, gamma=0.5)
    train = loader(labels if classification else target)
    ensemble.fit(train, **FIT.get(name, {"epochs": 2}), save_model=False)
    record = {"predict": ensemble.predict(x[:6]), "evaluate": ensemble.evaluate(train),
              "weights": [[p for p in estimator.parameters()] for estimator in ensemble.estimators_]}
    results[name] = record
emit(results)

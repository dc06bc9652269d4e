"""skorch, scikit-learn's interface around torch training: NeuralNetClassifier/Regressor fit, partial_fit,
predict and predict_proba on float64 modules, callbacks (EpochScoring, LRScheduler, EarlyStopping,
GradientNormClipping, Freezer), the history, a validation split, parameter saving and loading, and a
scikit-learn Pipeline with grid search."""
import os
import tempfile

import numpy as np
import torch
from torch import nn
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from skorch import NeuralNetClassifier, NeuralNetRegressor
from skorch.callbacks import EarlyStopping, EpochScoring, GradientNormClipping, LRScheduler
from skorch.dataset import ValidSplit

from _common import emit, fill

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 5))
y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(np.int64)
target = (X @ np.array([0.5, -1.0, 0.3, 0.0, 2.0]))[:, None]


class Classifier(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, X):
        return torch.softmax(self.net(X), dim=-1)


def seeded(module):
    return fill(module, seed=3)


results = {}
classifier = NeuralNetClassifier(seeded(Classifier()), max_epochs=6, lr=0.2, batch_size=16,
                                 optimizer=torch.optim.SGD, optimizer__momentum=0.5, iterator_train__shuffle=False,
                                 train_split=ValidSplit(4, stratified=True),
                                 callbacks=[EpochScoring("accuracy", lower_is_better=False, name="valid_acc2"),
                                            LRScheduler(policy=torch.optim.lr_scheduler.StepLR, step_size=2),
                                            GradientNormClipping(gradient_clip_value=0.5)],
                                 verbose=0)
classifier.fit(X, y)
history = classifier.history
results["classifier"] = {
    "train_loss": history[:, "train_loss"], "valid_loss": history[:, "valid_loss"],
    "valid_acc": history[:, "valid_acc"], "valid_acc2": history[:, "valid_acc2"],
    "proba": classifier.predict_proba(X[:8]), "predict": classifier.predict(X[:8]).tolist(),
    "score": classifier.score(X, y), "params": list(classifier.module_.parameters())}
classifier.partial_fit(X, y, epochs=2)
results["partial_fit"] = {"epochs": len(classifier.history), "params": list(classifier.module_.parameters())}

with tempfile.TemporaryDirectory() as folder:
    classifier.save_params(f_params=os.path.join(folder, "params.pt"), f_optimizer=os.path.join(folder, "opt.pt"))
    again = NeuralNetClassifier(Classifier, max_epochs=1, lr=0.2, verbose=0, optimizer=torch.optim.SGD,
                                optimizer__momentum=0.5)
    again.initialize()
    again.load_params(f_params=os.path.join(folder, "params.pt"), f_optimizer=os.path.join(folder, "opt.pt"))
    results["reloaded"] = again.predict_proba(X[:8])

regressor = NeuralNetRegressor(seeded(nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 1))), max_epochs=30,
                               lr=0.05, optimizer=torch.optim.Adam, batch_size=20, train_split=ValidSplit(5),
                               callbacks=[EarlyStopping(patience=3, monitor="valid_loss")], verbose=0,
                               iterator_train__shuffle=False)
regressor.fit(X, target)
results["regressor"] = {"epochs": len(regressor.history), "train_loss": regressor.history[:, "train_loss"],
                        "predict": regressor.predict(X[:5])}

pipeline = Pipeline([("scale", StandardScaler()),
                     ("net", NeuralNetClassifier(Classifier, max_epochs=3, lr=0.1, train_split=None, verbose=0,
                                                 iterator_train__shuffle=False))])
torch.manual_seed(0)
search = GridSearchCV(pipeline, {"net__lr": [0.05, 0.2], "net__module__hidden": [4, 6]}, cv=2, scoring="accuracy",
                      refit=False)
search.fit(X, y)
results["grid"] = {"params": [str(p) for p in search.cv_results_["params"]],
                   "scores": search.cv_results_["mean_test_score"]}


def lists(value):
    """scikit-learn and skorch answer in NumPy arrays and numbers: as lists and floats."""
    if isinstance(value, dict):
        return {k: lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [lists(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


emit(lists(results))

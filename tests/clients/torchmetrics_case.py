"""torchmetrics: classification and regression metrics updated batch by batch (Accuracy, F1Score,
AUROC, ConfusionMatrix, Precision/Recall, MeanSquaredError, MeanAbsoluteError, R2Score,
PearsonCorrCoef), a MetricCollection with prefix and compute groups, forward's batch values, reset,
state_dict, a Lightning module logging metric objects, and functional metrics."""
import warnings

import torch
import torchmetrics
from torchmetrics import MetricCollection
from torchmetrics.classification import (AUROC, Accuracy, ConfusionMatrix, F1Score, MulticlassPrecision,
                                         MulticlassRecall, BinaryAUROC, BinaryAccuracy)
from torchmetrics.regression import MeanAbsoluteError, MeanSquaredError, PearsonCorrCoef, R2Score
import torchmetrics.functional as TF

from _common import data, emit

warnings.filterwarnings("ignore")
results = {}


def float32_area(value):
    """torchmetrics turns the ROC curve's integer counts into float32 before integrating: the area is as
    exact as float32 summation, whose order differs from torch's by an ulp; 6 decimals are float32's."""
    return [round(v, 6) for v in value.reshape(-1).tolist()]


logits = [data(16, 4, seed=s) for s in range(3)]
labels = [torch.tensor([(7 * s + 3 * i) % 4 for i in range(16)]) for s in range(3)]

acc = Accuracy(task="multiclass", num_classes=4)
acc_top2 = Accuracy(task="multiclass", num_classes=4, top_k=2, average="macro")
f1 = F1Score(task="multiclass", num_classes=4, average="macro")
auroc = AUROC(task="multiclass", num_classes=4)
confusion = ConfusionMatrix(task="multiclass", num_classes=4, normalize="true")
batch_acc = []
for p, t in zip(logits, labels):
    batch_acc.append(acc(p.softmax(-1), t))  # forward: this batch's value, state accumulated
    acc_top2.update(p, t)
    f1.update(p, t)
    auroc.update(p.softmax(-1), t)
    confusion.update(p.argmax(-1), t)
results["batch_acc"] = batch_acc
results["acc"] = acc.compute()
results["acc_top2"] = acc_top2.compute()
results["f1"] = f1.compute()
results["auroc"] = float32_area(auroc.compute())
results["confusion"] = confusion.compute()
results["acc_state"] = {k: v for k, v in acc.metric_state.items()}
acc.reset()
results["acc_after_reset"] = [acc.tp.tolist(), acc.update_count]

collection = MetricCollection({"precision": MulticlassPrecision(num_classes=4, average="macro"),
                               "recall": MulticlassRecall(num_classes=4, average="weighted"),
                               "f1": F1Score(task="multiclass", num_classes=4, average="micro")},
                              prefix="val_")
for p, t in zip(logits, labels):
    collection.update(p, t)
results["collection"] = {k: v for k, v in collection.compute().items()}
results["collection_groups"] = {str(k): v for k, v in collection.compute_groups.items()}
results["collection_forward"] = {k: v for k, v in collection(logits[0], labels[0]).items()}

binary_scores = data(40, seed=7).sigmoid()
binary_target = (data(40, seed=8) > 0).long()
results["binary_acc"] = BinaryAccuracy(threshold=0.4)(binary_scores, binary_target)
results["binary_auroc"] = float32_area(BinaryAUROC()(binary_scores, binary_target))
results["binary_auroc_fpr"] = float32_area(BinaryAUROC(max_fpr=0.5)(binary_scores, binary_target))

preds, target = data(30, seed=9), data(30, seed=10)
regression = {"mse": MeanSquaredError(), "rmse": MeanSquaredError(squared=False), "mae": MeanAbsoluteError(),
              "r2": R2Score(), "pearson": PearsonCorrCoef()}
for metric in regression.values():
    for chunk in range(3):
        metric.update(preds[10 * chunk:10 * chunk + 10], target[10 * chunk:10 * chunk + 10])
results["regression"] = {k: m.compute() for k, m in regression.items()}
results["mse_state_dict"] = {k: v for k, v in MeanSquaredError().state_dict().items()}
persistent = MeanSquaredError()
persistent.persistent(True)
persistent.update(preds, target)
results["mse_persistent_state"] = {k: v for k, v in persistent.state_dict().items()}

results["functional"] = {
    "accuracy": TF.accuracy(logits[0], labels[0], task="multiclass", num_classes=4),
    "f1_weighted": TF.f1_score(logits[1], labels[1], task="multiclass", num_classes=4, average="weighted"),
    "auroc_none": float32_area(TF.auroc(logits[2].softmax(-1), labels[2], task="multiclass", num_classes=4,
                                         average=None)),
    "mse": TF.mean_squared_error(preds, target),
    "cosine": TF.pairwise_cosine_similarity(data(3, 5, seed=11), data(4, 5, seed=12)),
    "roc": list(TF.roc(binary_scores, binary_target, task="binary")),
    "pr_curve": list(TF.precision_recall_curve(binary_scores, binary_target, task="binary")),
    "explained_variance": TF.explained_variance(preds, target),
    "spearman": TF.spearman_corrcoef(preds, target),
}
results["version_has_metric"] = hasattr(torchmetrics, "Metric")
emit(results)

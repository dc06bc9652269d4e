"""PyTorch-Ignite training of a small float64 classifier: supervised trainer and evaluator engines,
event handlers, metrics (accuracy, loss, precision/recall, confusion matrix, running averages),
learning-rate schedulers, early stopping, checkpoints saved and reloaded, gradient accumulation."""
import os
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.handlers import Checkpoint, DiskSaver, EarlyStopping, LRScheduler, PiecewiseLinear
from ignite.metrics import Accuracy, ConfusionMatrix, Loss, Precision, Recall, RunningAverage, TopKCategoricalAccuracy

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
features = data(40, 6)
labels = (features[:, :3].sum(1) > 0).long() + (features[:, 3] > 0.5).long()
train = DataLoader(TensorDataset(features[:32], labels[:32]), batch_size=8)
valid = DataLoader(TensorDataset(features[32:], labels[32:]), batch_size=4)

model = fill(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)), scale=0.4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
trainer = create_supervised_trainer(model, optimizer, nn.CrossEntropyLoss(), gradient_accumulation_steps=2)
RunningAverage(output_transform=lambda loss: loss).attach(trainer, "running_loss")
metrics = {"accuracy": Accuracy(), "loss": Loss(nn.CrossEntropyLoss()), "precision": Precision(average=True),
           "recall": Recall(), "confusion": ConfusionMatrix(num_classes=3), "top2": TopKCategoricalAccuracy(k=2)}
evaluator = create_supervised_evaluator(model, metrics=metrics)
scheduler = LRScheduler(torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5))
trainer.add_event_handler(Events.ITERATION_COMPLETED, scheduler)
log = []


@trainer.on(Events.EPOCH_COMPLETED)
def validate(engine):
    evaluator.run(valid)
    found = dict(evaluator.state.metrics)
    log.append({"epoch": engine.state.epoch, "running_loss": engine.state.metrics["running_loss"],
                "lr": optimizer.param_groups[0]["lr"], **found})


@trainer.on(Events.ITERATION_COMPLETED(every=3))
def record(engine):
    log.append({"iteration": engine.state.iteration, "output": engine.state.output})


stopper = EarlyStopping(patience=2, score_function=lambda engine: -engine.state.metrics["loss"], trainer=trainer)
evaluator.add_event_handler(Events.COMPLETED, stopper)
results = {}
with tempfile.TemporaryDirectory() as folder:
    checkpoint = Checkpoint({"model": model, "optimizer": optimizer, "trainer": trainer}, DiskSaver(folder),
                            n_saved=2, score_function=lambda engine: engine.state.metrics["accuracy"],
                            score_name="accuracy", global_step_transform=lambda *_: trainer.state.epoch)
    evaluator.add_event_handler(Events.COMPLETED, checkpoint)
    state = trainer.run(train, max_epochs=6)
    results["files"] = sorted(os.listdir(folder))
    fresh = fill(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)), seed=9)
    Checkpoint.load_objects({"model": fresh}, torch.load(os.path.join(folder, results["files"][-1]),
                                                         weights_only=False))
    results["reloaded"] = list(fresh.parameters())

piecewise = PiecewiseLinear(optimizer, "lr", milestones_values=[(0, 0.1), (4, 0.5), (8, 0.05)])
lrs = []
for step in range(10):
    piecewise(None)
    lrs.append(optimizer.param_groups[0]["lr"])
results.update(log=log, epochs=state.epoch, iterations=state.iteration, params=list(model.parameters()), lrs=lrs)
emit(results)

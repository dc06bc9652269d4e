"""TRAK (traker) featurizing a float64 classifier over two checkpoints: per-example gradients of its
image-classification model output through torch.func (vmap over grad of a functional_call), the
out-to-loss weights, a CPU BasicProjector (normal and Rademacher sketches from seeded generators, in
blocks) kept in float64, the projected gradients it stores (in float32) per checkpoint, and the
gradient computer alone."""
import tempfile

import torch
from torch import nn
from trak import TRAKer
from trak.gradient_computers import FunctionalGradientComputer
from trak.modelout_functions import ImageClassificationModelOutput
from trak.projectors import BasicProjector, ProjectionType

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
labels = torch.tensor([0, 1, 2, 1, 0, 2, 1, 0])
train_x = data(8, 1, 2, 3)


def make_model(seed):
    return fill(nn.Sequential(nn.Flatten(), nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)), seed=seed, scale=0.5)


def attribute(proj_type, directory):
    model = make_model(0)
    grad_dim = sum(p.numel() for p in model.parameters())
    projector = BasicProjector(grad_dim=grad_dim, proj_dim=6, seed=3, proj_type=proj_type, device="cpu",
                               block_size=4, dtype=torch.float64)
    traker = TRAKer(model=model, task="image_classification", train_set_size=8, save_dir=directory,
                    device="cpu", projector=projector, use_half_precision=False, lambda_reg=1e-2,
                    logging_level=40)
    stored = []
    for checkpoint_id in range(2):
        traker.load_checkpoint(make_model(checkpoint_id).state_dict(), model_id=checkpoint_id)
        for start in (0, 4):
            traker.featurize(batch=(train_x[start:start + 4], labels[start:start + 4]), num_samples=4)
        store = traker.saver.current_store
        stored.append({"projected_grads": torch.tensor(store["grads"][:]),
                       "out_to_loss": torch.tensor(store["out_to_loss"][:]),
                       "featurized": torch.tensor(store["is_featurized"][:])})
    # (finalize_features and the scores take X^T X and its inverse in TRAK's float32, where the BLAS
    # summation orders of torch's MKL and of NumPy differ in the last bits: the case stops before them)
    return stored


results = {}
with tempfile.TemporaryDirectory() as directory:
    results["normal"] = attribute(ProjectionType.normal, directory + "/normal")
    results["rademacher"] = attribute(ProjectionType.rademacher, directory + "/rademacher")

# the per-example gradients and out-to-loss weights on their own
model = make_model(1)
computer = FunctionalGradientComputer(model=model, task=ImageClassificationModelOutput(),
                                      grad_dim=sum(p.numel() for p in model.parameters()), dtype=torch.float64,
                                      device="cpu")
computer.load_model_params(model)
results["per_example_grads"] = computer.compute_per_sample_grad(batch=(train_x, labels))
results["out_to_loss"] = computer.compute_loss_grad(batch=(train_x, labels))
emit(results)

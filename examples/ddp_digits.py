"""Train the demo's digits CNN with DistributedDataParallel on several processes.

    mpiexec -n 2 python examples/ddp_digits.py           # MPI starts the ranks
    python -m hookgrad run --nproc 2 examples/ddp_digits.py   # hookgrad starts them through mpiexec

Each rank reads its own half of every epoch (DistributedSampler), computes gradients on it, and
DDP averages them across the ranks during backward, so every rank takes the same optimizer step
as one process on the whole batch would. Rank 0 prints the progress and the held-out accuracy.
"""
import argparse

import hookgrad as torch
import hookgrad.distributed as dist
from hookgrad.demo import build_model, split_digits
from hookgrad.nn.parallel import DistributedDataParallel as DDP
from hookgrad.utils.data import DataLoader, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--batch-size", type=int, default=64, help="global batch size, split over the ranks")
parser.add_argument("--lr", type=float, default=0.01)
args = parser.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
if args.batch_size % world:
    raise SystemExit(f"--batch-size {args.batch_size} must divide evenly over {world} ranks")

x_train, y_train, x_test, y_test = split_digits(seed=0)
train = TensorDataset(torch.tensor(x_train), torch.tensor(y_train))
sampler = DistributedSampler(train, shuffle=True, seed=0)
loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler)

torch.manual_seed(0)
model = DDP(build_model(torch))          # rank 0's initial weights go to every rank
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
loss_fn = torch.nn.CrossEntropyLoss()

for epoch in range(1, args.epochs + 1):
    sampler.set_epoch(epoch)             # a new shuffle each epoch, the same on every rank
    model.train()
    total = torch.zeros(2)               # this rank's summed loss and sample count
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()                  # gradients are averaged across the ranks in here
        optimizer.step()
        total += torch.tensor([loss.item() * len(yb), len(yb)])
    dist.all_reduce(total)               # the epoch's mean loss over all ranks
    if rank == 0:
        print(f"epoch {epoch}/{args.epochs}: loss {total[0].item() / total[1].item():.4f} "
              f"({int(total[1].item())} samples on {world} ranks)")

model.eval()
with torch.no_grad():
    accuracy = (model(torch.tensor(x_test)).argmax(dim=1) == torch.tensor(y_test)).float().mean().item()
if rank == 0:
    print(f"held-out accuracy {accuracy:.3f}")
dist.destroy_process_group()

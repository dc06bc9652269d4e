"""zuko's normalizing flows on float64 data with a context: autoregressive (MAF), spline (NSF, NCSF),
coupling (NICE, RealNVP), Gaussianization, mixture, polynomial (BPF, SOSPF), neural autoregressive
(NAF: a monotonic network inverted by a bisection Function; UNAF: integrated by a Gauss-Legendre
Function) and continuous flows (CNF: an adaptive ODE solver through an adjoint Function, exact and
Hutchinson traces): log-densities, seeded samples, inverses, parameter gradients and Adam steps."""
import torch
import zuko

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
x, context = data(6, 3), data(6, 2, seed=2)

FLOWS = {
    "MAF": lambda: zuko.flows.MAF(3, 2, transforms=2, hidden_features=(8, 8)),
    "MAF_passes": lambda: zuko.flows.MAF(3, 2, transforms=2, passes=2, randperm=False),
    "NSF": lambda: zuko.flows.NSF(3, 2, bins=4, transforms=2, hidden_features=(8,)),
    "NCSF": lambda: zuko.flows.NCSF(3, 2, bins=4, transforms=1, hidden_features=(8,)),
    "NICE": lambda: zuko.flows.NICE(3, 2, transforms=2, hidden_features=(8,)),
    "RealNVP": lambda: zuko.flows.RealNVP(3, 2, transforms=2, hidden_features=(8,)),
    "GF": lambda: zuko.flows.GF(3, 2, transforms=2, components=3),
    "GMM": lambda: zuko.flows.GMM(3, 2, components=3, hidden_features=(8,)),
    "BPF": lambda: zuko.flows.BPF(3, 2, degree=4, transforms=1, hidden_features=(8,)),
    "SOSPF": lambda: zuko.flows.SOSPF(3, 2, degree=2, polynomials=2, transforms=1, hidden_features=(8,)),
    "NAF": lambda: zuko.flows.NAF(3, 2, transforms=1, signal=4, network={"hidden_features": (8,)},
                                  hidden_features=(8,)),
    "UNAF": lambda: zuko.flows.UNAF(3, 2, transforms=1, signal=4, network={"hidden_features": (8,)},
                                    hidden_features=(8,)),
    "CNF": lambda: zuko.flows.CNF(3, 2, hidden_features=(8,), atol=1e-7, rtol=1e-6),
    "CNF_hutchinson": lambda: zuko.flows.CNF(3, 2, hidden_features=(8,), exact=False),
}
results = {}
for name, make in FLOWS.items():
    torch.manual_seed(0)
    flow = fill(make(), scale=0.3)
    distribution = flow(context)
    torch.manual_seed(1)   # (the Hutchinson trace draws its noise vector)
    log_prob = distribution.log_prob(x)
    log_prob.mean().backward()
    record = {"log_prob": log_prob, "grads": [p.grad for p in flow.parameters()]}
    flow.zero_grad()
    torch.manual_seed(2)
    if name == "GMM":   # (a mixture, not a transformed distribution: it samples without a gradient)
        record["sample"] = distribution.sample()
    else:
        sample, sample_log_prob = distribution.rsample_and_log_prob()
        record["rsample"], record["rsample_log_prob"] = sample, sample_log_prob
        transform = distribution.transform
        record["round_trip"] = transform.inv(transform(x)) - x
    if name not in ("CNF", "CNF_hutchinson", "GMM"):   # (a few training steps; the ODE flows take long)
        optimizer = torch.optim.Adam(flow.parameters(), lr=1e-2)
        losses = []
        for _ in range(3):
            loss = -flow(context).log_prob(x).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        record["losses"] = losses
    results[name] = record

# an unconditional flow; a lazy distribution's sample shape; zuko's own distributions
torch.manual_seed(0)
flow = fill(zuko.flows.NSF(2, transforms=2, hidden_features=(8,)), scale=0.3)
torch.manual_seed(3)
results["unconditional"] = {"log_prob": flow().log_prob(x[:, :2]), "sample": flow().sample((2, 3))}
distributions = {
    "DiagNormal": zuko.distributions.DiagNormal(torch.zeros(3), torch.ones(3) * 2),
    "BoxUniform": zuko.distributions.BoxUniform(-torch.ones(3) * 3, torch.ones(3) * 3),
    "Mixture": zuko.distributions.Mixture(zuko.distributions.DiagNormal(torch.zeros(2, 3), torch.ones(2, 3)),
                                          torch.tensor([0.3, 0.7]).log()),
    "Truncated": zuko.distributions.Truncated(torch.distributions.Normal(0.0, 1.0), -1.0, 2.0),
}
for name, distribution in distributions.items():
    torch.manual_seed(4)
    point = x[:, 0].clamp(-0.9, 1.9) if name == "Truncated" else x
    results[name] = {"log_prob": distribution.log_prob(point), "sample": distribution.sample((3,))}
emit(results)

"""Normalizing flows: normflows (RealNVP-style affine coupling with ActNorm and permutations, neural
spline flows, planar and radial flows; forward and reverse KL training, sampling, log-densities) and
nflows (masked autoregressive and coupling transforms with rational-quadratic splines, log_prob,
sample_and_log_prob, inverse)."""
import warnings

import torch

from _common import data, emit

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
x = data(64, 2)
x = torch.stack([x[:, 0], 0.5 * x[:, 1] + x[:, 0] ** 2], -1)
results = {}


def train(model, steps=5, lr=1e-3):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model.forward_kld(x) if hasattr(model, "forward_kld") else -model.log_prob(x).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


import normflows as nf  # noqa: E402

builds = {}


def real_nvp():
    flows = []
    for i in range(4):
        net = nf.nets.MLP([1, 8, 2], init_zeros=True)
        flows += [nf.flows.AffineCouplingBlock(net), nf.flows.Permute(2, mode="swap"), nf.flows.ActNorm(2)]
    return nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows)


def spline():
    flows = []
    for _ in range(2):
        flows += [nf.flows.AutoregressiveRationalQuadraticSpline(2, 1, 8), nf.flows.LULinearPermute(2)]
    return nf.NormalizingFlow(nf.distributions.DiagGaussian(2, trainable=False), flows)


def coupling_spline():
    flows = [nf.flows.CoupledRationalQuadraticSpline(2, 1, 8), nf.flows.Permute(2, mode="shuffle"),
             nf.flows.CoupledRationalQuadraticSpline(2, 1, 8)]
    return nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows)


def planar_radial():
    flows = [nf.flows.Planar((2,)), nf.flows.Radial((2,)), nf.flows.Planar((2,), act="leaky_relu")]
    return nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows, p=nf.distributions.TwoMoons())


for name, build in [("real_nvp", real_nvp), ("spline", spline), ("coupling_spline", coupling_spline),
                    ("planar_radial", planar_radial)]:
    torch.manual_seed(0)
    model = build()
    invertible = name != "planar_radial"  # (planar and radial flows only sample: they have no inverse)
    losses = train(model) if invertible else None
    torch.manual_seed(1)
    samples, log_q = model.sample(6)
    results[name] = {"losses": losses, "samples": samples.detach(), "log_q": log_q.detach()}
    if invertible:
        results[name].update(log_prob=model.log_prob(x[:6]).detach(),
                             inverse=model.inverse(model.forward(x[:4])).detach())
    else:  # reverse KL to a two-moons target, which needs only sampling
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        losses = []
        for _ in range(4):
            optimizer.zero_grad()
            loss = model.reverse_kld(16)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results[name]["reverse_kld"] = losses

try:
    from nflows import distributions, flows, transforms
    from nflows.nn.nets import ResidualNet
except ImportError:  # nflows is optional beside normflows
    results["nflows"] = None
else:
    def maf():
        layers = []
        for _ in range(3):
            layers += [transforms.ReversePermutation(features=2),
                       transforms.MaskedAffineAutoregressiveTransform(features=2, hidden_features=8)]
        return flows.Flow(transforms.CompositeTransform(layers), distributions.StandardNormal(shape=[2]))

    def nsf():
        mask = torch.tensor([1, 0])
        layers = [transforms.PiecewiseRationalQuadraticCouplingTransform(
            mask=mask if i % 2 == 0 else 1 - mask,
            transform_net_create_fn=lambda n_in, n_out: ResidualNet(n_in, n_out, hidden_features=8, num_blocks=1),
            num_bins=6, tails="linear", tail_bound=4.0) for i in range(2)]
        layers.append(transforms.MaskedPiecewiseRationalQuadraticAutoregressiveTransform(
            features=2, hidden_features=8, num_bins=5, tails="linear", tail_bound=4.0))
        return flows.Flow(transforms.CompositeTransform(layers), distributions.StandardNormal(shape=[2]))

    for name, build in [("nflows_maf", maf), ("nflows_nsf", nsf)]:
        torch.manual_seed(0)
        flow = build()
        losses = train(flow)
        torch.manual_seed(1)
        samples, log_prob = flow.sample_and_log_prob(5)
        noise, logabsdet = flow._transform(x[:4])
        back, _ = flow._transform.inverse(noise)
        results[name] = {"losses": losses, "samples": samples.detach(), "log_prob": log_prob.detach(),
                         "noise": noise.detach(), "logabsdet": logabsdet.detach(), "round_trip": back.detach()}
emit(results)

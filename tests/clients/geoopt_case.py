"""geoopt Riemannian optimisation on float64 manifolds: ManifoldParameter/ManifoldTensor (Tensor
subclasses holding their manifold), Riemannian SGD and Adam on the sphere, Stiefel, Poincare ball and
positive-definite manifolds, projections, exponential and logarithm maps, distances, transports."""
import torch
import geoopt
from geoopt.optim import RiemannianAdam, RiemannianSGD

from _common import data, emit

torch.set_default_dtype(torch.float64)
results = {}

sphere = geoopt.Sphere()
stiefel = geoopt.Stiefel()
ball = geoopt.PoincareBall(c=1.0)
spd = geoopt.SymmetricPositiveDefinite()
euclid = geoopt.Euclidean()

target = data(5, seed=3)
point = geoopt.ManifoldParameter(sphere.projx(data(5)), manifold=sphere)
frame = geoopt.ManifoldParameter(stiefel.projx(data(5, 3, seed=4)), manifold=stiefel)
hyper = geoopt.ManifoldParameter(ball.projx(data(4, 2, seed=5) * 0.3), manifold=ball)
plain = torch.nn.Parameter(data(3, seed=6))
results["types"] = [type(p).__name__ for p in (point, frame, hyper)] + [isinstance(point, torch.Tensor)]

optimizer = RiemannianAdam([point, frame, hyper, plain], lr=0.05)
losses = []
for _ in range(6):
    optimizer.zero_grad()
    loss = -(point @ target) + ((frame.T @ frame - torch.eye(3)) ** 2).sum() + (frame[:, 0] @ target) ** 2 \
        + ball.dist(hyper, torch.zeros(2)).sum() + (plain ** 2).sum()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
results["adam"] = {"losses": losses, "point": point.data, "frame": frame.data, "hyper": hyper.data,
                   "plain": plain.data, "on_sphere": point.norm().item(),
                   "orthonormal": (frame.T @ frame).data, "state_keys": sorted(optimizer.state_dict()["state"][0])}

point2 = geoopt.ManifoldParameter(sphere.projx(data(5, seed=7)), manifold=sphere)
optimizer = RiemannianSGD([point2], lr=0.1, momentum=0.9, nesterov=True, stabilize=2)
for _ in range(5):
    optimizer.zero_grad()
    (-(point2 @ target)).backward()
    optimizer.step()
results["sgd"] = point2.data

x, u = sphere.projx(data(4)), data(4, seed=8)
v = sphere.proju(x, u)
y = sphere.expmap(x, v)
results["sphere"] = {"proju": v, "expmap": y, "logmap": sphere.logmap(x, y), "dist": sphere.dist(x, y),
                     "transp": sphere.transp(x, y, v), "retr": sphere.retr(x, v), "inner": sphere.inner(x, v, v)}
a, b = ball.projx(data(3, 2, seed=9) * 0.4), ball.projx(data(3, 2, seed=10) * 0.4)
results["ball"] = {"mobius_add": ball.mobius_add(a, b), "dist": ball.dist(a, b), "expmap0": ball.expmap0(b),
                   "logmap": ball.logmap(a, b), "egrad2rgrad": ball.egrad2rgrad(a, b),
                   "mobius_matvec": ball.mobius_matvec(data(2, 2, seed=11), a), "dist0": ball.dist0(a)}
m = data(3, 3, seed=12)
p = m @ m.T + torch.eye(3)
results["spd"] = {"projx": spd.projx(m), "dist": spd.dist(p, torch.eye(3) * 2),
                  "expmap": spd.expmap(p, (m + m.T) / 4), "inner": spd.inner(p, (m + m.T) / 2)}
q = stiefel.projx(data(4, 2, seed=13))
results["stiefel"] = {"projx": q, "proju": stiefel.proju(q, data(4, 2, seed=14)),
                      "retr": stiefel.retr(q, stiefel.proju(q, data(4, 2, seed=14)))}
tensor = geoopt.ManifoldTensor(data(3, seed=15), manifold=euclid, requires_grad=True)
(tensor ** 3).sum().backward()
with torch.no_grad():
    projected = tensor.proj_()
results["manifold_tensor"] = {"grad": tensor.grad, "proj": projected.data, "manifold": repr(tensor.manifold)}
emit(results)

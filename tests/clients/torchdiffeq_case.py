"""torchdiffeq: ODE solutions (adaptive dopri5/bosh3/adaptive_heun, fixed-grid euler/midpoint/rk4, implicit
Adams) of a small float64 neural ODE, gradients by backpropagating through the solver and by the adjoint
method (autograd.grad of vector-Jacobian products at every step), event handling."""
import torch
from torch import nn
from torchdiffeq import odeint, odeint_adjoint, odeint_event

from _common import data, emit, fill


class Field(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 3))
        self.calls = 0

    def forward(self, t, y):
        self.calls += 1
        return self.net(y) * torch.cos(t)


field = fill(Field().double(), scale=0.4)
y0 = data(4, 3)
t = torch.linspace(0.0, 1.0, 5, dtype=torch.float64)
results = {}

# (dopri8 is left out: its error estimate cancels to a few ulps of the stage sums, so the step size it picks
# follows the order of BLAS's summation, which differs between torch's MKL and NumPy's)
for method, options in (("dopri5", {}), ("bosh3", {}), ("adaptive_heun", {}),
                        ("euler", {"step_size": 0.1}), ("midpoint", {"step_size": 0.1}),
                        ("rk4", {"step_size": 0.1}), ("explicit_adams", {"step_size": 0.1}),
                        ("implicit_adams", {"step_size": 0.1})):
    field.calls = 0
    field.zero_grad()
    y = odeint(field, y0, t, method=method, options=options, rtol=1e-6, atol=1e-8)
    loss = (y[-1] ** 2).sum()
    loss.backward()
    results[method] = {"y": y, "calls": field.calls, "grads": [p.grad.clone() for p in field.parameters()]}

# the adjoint method: gradients from a backward ODE solve of vector-Jacobian products
for method in ("dopri5", "rk4"):
    field.zero_grad()
    start = y0.clone().requires_grad_()
    y = odeint_adjoint(field, start, t, method=method, rtol=1e-7, atol=1e-9,
                       options={"step_size": 0.1} if method == "rk4" else {})
    (y[-1] ** 2).sum().backward()
    results["adjoint_" + method] = {"y": y, "grads": [p.grad.clone() for p in field.parameters()],
                                    "y0_grad": start.grad}

# a tuple state and a gradient with respect to the time points
def coupled(t, state):
    x, v = state
    return v, -x - 0.1 * v


times = torch.tensor([0.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
x0 = torch.tensor([1.0, 0.5], dtype=torch.float64, requires_grad=True)
xs, vs = odeint(coupled, (x0, torch.zeros(2, dtype=torch.float64)), times, rtol=1e-8, atol=1e-10)
results["tuple_state"] = {"x": xs, "v": vs, "grads": torch.autograd.grad(xs[-1].sum() + vs[-1].sum(), [x0, times])}


# an event: when the first coordinate of a falling body reaches zero
def falling(t, state):
    return torch.stack([state[1], torch.full_like(state[1], -9.81)])


def hit_ground(t, state):
    return state[0]


height = torch.tensor([10.0, 0.0], dtype=torch.float64, requires_grad=True)
event_t, event_state = odeint_event(falling, height, torch.tensor(0.0, dtype=torch.float64), event_fn=hit_ground,
                                    method="dopri5", rtol=1e-9, atol=1e-11)
results["event"] = {"t": event_t, "state": event_state[-1], "dt_dh": torch.autograd.grad(event_t, height)[0]}
emit(results)

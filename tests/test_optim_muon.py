"""optim.Muon against torch 2.13: parameters, momentum buffers and state dicts over several steps,
each option, and the argument checks."""
import numpy as np
import pytest

from difftest import catch, differential

OPTIONS = [{}, {"nesterov": False}, {"adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.0},
           {"momentum": 0.5, "ns_steps": 3, "lr": 0.05}, {"ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-5}]


@pytest.mark.parametrize("options", OPTIONS)
@differential(rtol=3e-2, atol=3e-4)  # the Newton-Schulz steps round to bfloat16 (as in torch)
def test_muon_steps_match_torch(T, options):
    rng = np.random.default_rng(0)
    wide = T.tensor(rng.normal(size=(3, 5)).astype(np.float32), requires_grad=True)
    tall = T.tensor(rng.normal(size=(6, 2)).astype(np.float32), requires_grad=True)
    opt = T.optim.Muon([wide, tall], **{"lr": 0.02, **options})
    x = T.tensor(rng.normal(size=(4, 5)).astype(np.float32))
    for _ in range(3):
        opt.zero_grad()
        loss = ((x @ wide.T) @ tall.T[:, :3].T).pow(2).mean() + (tall ** 2).sum() * 0.1
        loss.backward()
        opt.step()
    state = opt.state_dict()
    return (wide.detach(), tall.detach(), sorted(state["state"][0]), state["state"][1]["momentum_buffer"],
            state["param_groups"])


@differential(rtol=3e-2, atol=3e-4)
def test_muon_state_dict_round_trip(T):
    rng = np.random.default_rng(1)
    w = T.tensor(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
    opt = T.optim.Muon([w], lr=0.1)
    w.grad = T.ones(4, 3)
    opt.step()
    saved = opt.state_dict()
    w2 = T.tensor(w.detach().numpy().copy(), requires_grad=True)
    opt2 = T.optim.Muon([w2], lr=0.1)
    opt2.load_state_dict(saved)
    for param, optimizer in ((w, opt), (w2, opt2)):
        param.grad = T.full((4, 3), 0.5)
        optimizer.step()
    return w.detach(), w2.detach(), opt2.state_dict()["state"][0]["momentum_buffer"]


@differential
def test_muon_argument_errors(T):
    w = T.zeros(2, 2, requires_grad=True)
    return [catch(T.optim.Muon, [w], lr=-1.0), catch(T.optim.Muon, [w], momentum=-0.1),
            catch(T.optim.Muon, [w], weight_decay=-1), catch(T.optim.Muon, [w], adjust_lr_fn="other"),
            catch(T.optim.Muon, [T.zeros(3, requires_grad=True)]), catch(T.optim.Muon, [w], lr=T.ones(2))]


@differential
def test_swap_in_optimizer_params_and_state(T):
    live = T.nn.Parameter(T.tensor([1.0, 2.0]))
    opt = T.optim.Adam([live], lr=0.1)
    live.grad = T.tensor([1.0, -1.0])
    opt.step()
    other = T.tensor([5.0, 5.0], requires_grad=True)
    other.grad = T.tensor([0.5, 0.5])
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = 1.0
    before = opt.state[live]["exp_avg"].clone()
    with T.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, saved):
        inside = (opt.param_groups[0]["params"][0] is other, opt.param_groups[0]["lr"])
        opt.step()
    errors = [catch(lambda: T.optim.swap_in_optimizer_params_and_state(T.optim.SGD([live], lr=1), {}, saved)
                    .__enter__()),
              catch(lambda: T.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, {"state": [],
                                                                                          "param_groups": []})
                    .__enter__()),
              catch(lambda: T.optim.swap_in_optimizer_params_and_state(
                  opt, {"w": other}, {"state": {}, "param_groups": [{"params": [0]}]}).__enter__())]
    return (inside, other.detach(), live.detach(), opt.param_groups[0]["lr"], opt.param_groups[0]["params"][0] is live,
            T.equal(opt.state[live]["exp_avg"], before), saved["state"][0]["exp_avg"], errors)

"""L-BFGS, with PyTorch's options, iteration rules and (optional) strong-Wolfe line search.

Each ``step(closure)`` runs up to ``max_iter`` quasi-Newton iterations on the concatenation of
all parameters, calling ``closure`` (which must recompute the loss and the gradients) once per
iteration, or once per line-search trial with ``line_search_fn='strong_wolfe'``. The search
direction comes from the two-loop recursion over the last ``history_size`` curvature pairs.

The state lives under the first parameter, with PyTorch's keys: ``func_evals``, ``n_iter``,
``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``,
``prev_loss`` and ``al``. Vectors are tensors; ``t`` and ``prev_loss`` are Python floats.
"""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _as_float, _bump, _enable_grad, _no_grad, _tensor_cls, _wrap

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``
    (default: the interval between the points); the interval's middle when the cubic has none."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def _strong_wolfe_search(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step ``t`` along ``d`` that meets the strong Wolfe conditions: first bracket an
    acceptable interval, then shrink it by cubic interpolation (the More-Thuente scheme as
    minFunc and PyTorch run it). Returns ``(f, g, t, evaluations)``."""
    d_norm = float(np.abs(d).max())
    f_new, g_new = evaluate(t, d)
    evals = 1
    gtd_new = float(np.dot(g_new, d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g.copy(), gtd
    done = False
    ls_iter = 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # still descending: extrapolate
        previous_t = t
        t = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                           bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = previous_t, f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t, d)
        evals += 1
        gtd_new = float(np.dot(g_new, d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until the conditions hold or it gets too small
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        top, bottom = max(bracket), min(bracket)
        margin = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < margin:
            # too close to an end: move away from it unless progress was fine last time
            if insufficient_progress or t >= top or t <= bottom:
                t = top - margin if abs(t - top) < abs(t - bottom) else bottom + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t, d)
        evals += 1
        gtd_new = float(np.dot(g_new, d))
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


def _array(value):
    return value._ndarray if isinstance(value, _tensor_cls()) else np.asarray(value)


class LBFGS(Optimizer):
    """L-BFGS with PyTorch's options and defaults (``lr=1, max_iter=20, max_eval=max_iter * 5 // 4,
    tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=None``).
    Only one parameter group is supported, as in PyTorch."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def __setstate__(self, state):
        super().__setstate__(state)
        self._params = self.param_groups[0]["params"]

    # -- flat views over all parameters --------------------------------------------------------
    def _flat_grad(self) -> np.ndarray:
        parts = [np.zeros(p._ndarray.size, dtype=p._ndarray.dtype) if p.grad is None else p.grad._ndarray.ravel()
                 for p in self._params]
        return np.concatenate(parts)

    def _move(self, step_size, direction: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            n = p._ndarray.size
            p._ndarray += step_size * direction[offset:offset + n].reshape(p._ndarray.shape)
            _bump(p)
            offset += n

    def _snapshot(self) -> list:
        return [p._ndarray.copy() for p in self._params]

    def _restore(self, saved: list) -> None:
        for p, data in zip(self._params, saved):
            p._ndarray[...] = data
            _bump(p)

    def step(self, closure):
        """Run up to ``max_iter`` iterations; ``closure`` must zero the gradients, recompute the
        loss, call ``backward`` and return the loss. Returns the loss of the first evaluation."""
        with _no_grad(), np.errstate(all="ignore"):
            return self._run(closure)

    def _evaluate(self, closure) -> float:
        with _enable_grad():
            return float(closure())

    def _run(self, closure):
        group = self.param_groups[0]
        lr = _as_float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with _enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        # the previous step's memory, as plain arrays and floats
        d = _array(state["d"]) if state.get("d") is not None else None
        t = _as_float(state["t"]) if state.get("t") is not None else None
        old_dirs = [_array(v) for v in state.get("old_dirs") or []]
        old_stps = [_array(v) for v in state.get("old_stps") or []]
        ro = [_as_float(v) for v in state.get("ro") or []]
        h_diag = _as_float(state["H_diag"]) if state.get("H_diag") is not None else None
        prev_flat_grad = _array(state["prev_flat_grad"]).copy() if state.get("prev_flat_grad") is not None else None
        prev_loss = state.get("prev_loss")
        dtype = flat_grad.dtype

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * dtype.type(t)
                ys = float(np.dot(y, s))
                if ys > 1e-10:  # keep only pairs with positive curvature
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(np.dot(y, y))
                # two-loop recursion: d = -H grad
                al = [None] * history_size
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(np.dot(old_stps[i], q)) * ro[i]
                    q = q + dtype.type(-al[i]) * old_dirs[i]
                d = r = q * dtype.type(h_diag)
                for i in range(len(old_dirs)):
                    be_i = float(np.dot(old_dirs[i], r)) * ro[i]
                    r += dtype.type(al[i] - be_i) * old_stps[i]
                state["al"] = [None if a is None else _wrap(np.array(a, dtype=dtype)) for a in al]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = float(np.dot(flat_grad, d))
            if gtd > -tolerance_change:  # not a descent direction
                break

            evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = self._snapshot()

                def evaluate(step, direction):
                    self._move(step, direction)
                    value = self._evaluate(closure)
                    grad = self._flat_grad().copy()
                    self._restore(start)
                    return value, grad

                loss, flat_grad, t, evals = _strong_wolfe_search(evaluate, t, d, loss, flat_grad, gtd,
                                                                 max_ls=max_eval - current_evals)
                t = float(t)
                self._move(t, d)
                optimal = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._move(t, d)
                optimal = False
                if n_iter != max_iter:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    optimal = np.abs(flat_grad).max() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or optimal:
                break
            if np.abs(d * dtype.type(t)).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = _wrap(np.array(d, copy=True))
        state["t"] = t
        state["old_dirs"] = [_wrap(v) for v in old_dirs]
        state["old_stps"] = [_wrap(v) for v in old_stps]
        state["ro"] = [_wrap(np.array(v, dtype=dtype)) for v in ro]
        state["H_diag"] = h_diag if isinstance(h_diag, int) else _wrap(np.array(h_diag, dtype=dtype))
        state["prev_flat_grad"] = _wrap(prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss

"""Empirical privacy auditing: a statistically valid *lower* bound on ε from repeated releases.

An ε-DP (or (ε, δ)-DP) mechanism M satisfies, for every pair of neighbouring inputs D0, D1 and
every event E on its output,

    P[M(D1) ∈ E] ≤ e^ε · P[M(D0) ∈ E] + δ      and the same with D0 and D1 swapped.      (1)

So if we run M ``trials`` times on each of D0 and D1 and count how often E happens (k0, k1), any
pair of confidence bounds p1 ≥ p̲1 and p0 ≤ p̄0 gives

    ε ≥ ln((p̲1 − δ) / p̄0).                                                               (2)

This is the recipe of M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially Private Machine
Learning: How Private is Private SGD?", NeurIPS 2020 (Clopper–Pearson bounds on the two event
frequencies), also used by M. Nasr, S. Song, A. Thakurta, N. Papernot, N. Carlini, "Adversary
Instantiation: Lower Bounds for Differentially Private Machine Learning", IEEE S&P 2021, and by
Google's DP-Auditorium (Kong, Muñoz Medina, Ribero, Syed, "DP-Auditorium: a Large Scale Library
for Auditing Differential Privacy", IEEE S&P 2024). An audit can only ever *refute* a privacy
claim (ε_lower > claimed ε): finding ε_lower ≤ ε is consistency, not a proof of privacy.

What this module computes
-------------------------
* Exact Clopper–Pearson bounds (C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial
  limits illustrated in the case of the binomial", Biometrika, 1934): for k successes in n trials
  and tail probability a, p̲ = Beta⁻¹(a; k, n − k + 1) (0 when k = 0) and
  p̄ = Beta⁻¹(1 − a; k + 1, n − k) (1 when k = n), via ``scipy.stats.beta.ppf``.
* Simultaneous validity (Bonferroni): with K events, each of the 2K probabilities (p0 and p1 of
  every event) gets a two-sided interval with miscoverage α/(2K), i.e. each tail a = α/(4K). By
  the union bound all 2K intervals hold at once with probability ≥ 1 − α, so *every* instance of
  (2) — both directions (D1 over D0 and D0 over D1) and both the event and its complement — holds
  at once, and their maximum over all events is a (1 − α) lower bound on the true ε.
* Events: a boolean feature of one output ("the added edge appears"), evaluated on every trial; or
  a scalar statistic with a threshold ("the released count exceeds τ"). τ is chosen on a held-out
  *fit* half of the trials (the τ that maximises the same bound computed on the fit half, with the
  tail further divided by the number of candidate τ so that a lucky far tail does not win), and the
  counts are then taken on the other, *test* half only, so the choice of τ does not bias the test
  (the trials are i.i.d.).
* δ: with a claimed (ε, δ), (2) uses p̲ − δ (no evidence when that is ≤ 0).

Audits are simulations: the release function receives a seeded ``numpy.random.Generator``, so a
run is reproducible. Python loops over the trials only (each trial is one whole release).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta

from dpviz.core.accounting import positive, probability
from dpviz.core.events import AUDIT_NOTICE, Event, EventKind, ReleaseFn, boolean_event, threshold_event
from dpviz.errors import InputError

__all__ = ["Event", "EventResult", "AuditResult", "boolean_event", "threshold_event", "clopper_pearson",
           "epsilon_lower_bound", "audit", "format_result", "AUDIT_NOTICE", "MAX_THRESHOLDS"]

MAX_THRESHOLDS = 2048
"""At most this many candidate thresholds are scored on the fit half (quantiles of the pooled values)."""

Progress = Callable[[int, int], None]


# --------------------------------------------------------------------------------------------- bounds


def clopper_pearson(k: np.ndarray | int, n: int, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact Clopper–Pearson bounds (lower, upper) for k successes in n trials, each one-sided with
    miscoverage ``tail`` (so [lower, upper] is a two-sided interval of level 1 − 2·tail).

    Clopper & Pearson, Biometrika 1934: lower = Beta⁻¹(tail; k, n−k+1), upper = Beta⁻¹(1−tail; k+1, n−k),
    with lower = 0 at k = 0 and upper = 1 at k = n. Vectorised over ``k``.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InputError(f"trials: expected a positive integer number of trials, got {n!r}")
    tail = probability("tail", tail)
    k = np.asarray(k, dtype=np.int64)
    if np.any((k < 0) | (k > n)):
        raise InputError(f"counts must lie in 0..{n}, got {k.min()}..{k.max()}")
    kf = k.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, beta.ppf(tail, np.maximum(kf, 1.0), n - kf + 1.0), 0.0)
        upper = np.where(k < n, beta.ppf(1.0 - tail, kf + 1.0, np.maximum(n - kf, 1.0)), 1.0)
    return lower, upper


def epsilon_lower_bound(lower_a: np.ndarray | float, upper_b: np.ndarray | float,
                        delta: float = 0.0) -> np.ndarray:
    """Eq. (2): ln((p̲_a − δ)/p̄_b), clipped at 0 (no evidence when p̲_a ≤ δ or the ratio ≤ 1)."""
    num = np.asarray(lower_a, dtype=float) - delta
    den = np.asarray(upper_b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(np.where(num > 0, num, np.nan) / den)
    return np.maximum(np.nan_to_num(eps, nan=0.0, neginf=0.0), 0.0)


_DIRECTIONS = (
    # (label, which is numerator/denominator) with l0, u0, l1, u1 the bounds of P[E|D0], P[E|D1]
    "P[E | D1] > e^ε P[E | D0] + δ",
    "P[E | D0] > e^ε P[E | D1] + δ",
    "P[not E | D1] > e^ε P[not E | D0] + δ",
    "P[not E | D0] > e^ε P[not E | D1] + δ",
)


def _four_directions(l0, u0, l1, u1, delta: float) -> np.ndarray:
    """ε lower bounds of the four instances of Eq. (1) (rows, in the order of ``_DIRECTIONS``).
    The complement's bounds are [1 − u, 1 − l]."""
    return np.stack([
        epsilon_lower_bound(l1, u0, delta),
        epsilon_lower_bound(l0, u1, delta),
        epsilon_lower_bound(1.0 - np.asarray(u1), 1.0 - np.asarray(l0), delta),
        epsilon_lower_bound(1.0 - np.asarray(u0), 1.0 - np.asarray(l1), delta),
    ])


# --------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class EventResult:
    """One event on the test trials: ``counts`` = (k0, k1) out of ``n`` each, ``p_hat`` = k/n, ``bounds``
    = ((p̲0, p̄0), (p̲1, p̄1)) Clopper–Pearson at tail ``tail`` each, ``epsilon_lower`` the best of
    Eq. (2) over its four instances (``direction`` says which)."""

    description: str
    kind: EventKind
    threshold: float | None
    n: int
    counts: tuple[int, int]
    p_hat: tuple[float, float]
    bounds: tuple[tuple[float, float], tuple[float, float]]
    tail: float
    epsilon_lower: float
    direction: str


@dataclass(frozen=True)
class AuditResult:
    """The audit: ``epsilon_lower`` is a (1 − ``alpha``) lower bound on ε (max over ``events``);
    ``event``, ``counts``, ``p_hat``, ``bounds`` and ``direction`` are those of the event that gave it.
    ``consistent`` is ``epsilon_lower <= epsilon`` (the claim is not refuted; always True without a claim)."""

    epsilon_lower: float
    epsilon: float | None
    delta: float
    alpha: float
    trials: int
    event: str
    direction: str
    n: int
    counts: tuple[int, int]
    p_hat: tuple[float, float]
    bounds: tuple[tuple[float, float], tuple[float, float]]
    consistent: bool
    events: tuple[EventResult, ...]
    notice: str = AUDIT_NOTICE

    @property
    def verdict(self) -> str:
        """One line: the bound against the claim."""
        lb = f"ε_lower = {self.epsilon_lower:.3f} ({1 - self.alpha:.0%} confidence)"
        if self.epsilon is None:
            return f"{lb}; no ε claimed"
        claim = f"claimed ε = {self.epsilon:g}" + (f", δ = {self.delta:g}" if self.delta else "")
        if self.consistent:
            return f"CONSISTENT: {lb} ≤ {claim} (no violation found; an audit cannot prove privacy)"
        return f"VIOLATION: {lb} > {claim}: the privacy claim is refuted"


# --------------------------------------------------------------------------------------------- audit


def _check_trials(trials: Any, kinds: Sequence[EventKind]) -> int:
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)):
        raise InputError(f"trials: expected a positive integer, got {trials!r}")
    need = 4 if "threshold" in kinds else 1
    if trials < need:
        raise InputError(f"trials: expected at least {need} (threshold events split the trials into a fit half "
                         f"and a test half), got {trials}")
    return int(trials)


def _features(release_fn: ReleaseFn, data: Any, events: Sequence[Event], trials: int, rng: np.random.Generator,
              tick: Callable[[], None]) -> np.ndarray:
    """``trials`` releases on ``data``; row j = feature of event j on each trial (float)."""
    out = np.empty((len(events), trials), dtype=float)
    for t in range(trials):  # one whole release per iteration: the trials are the unit of work
        output = release_fn(data, rng)
        for j, ev in enumerate(events):
            value = ev.feature(output)
            out[j, t] = float(bool(value)) if ev.kind == "boolean" else float(value)
        tick()
    if not np.all(np.isfinite(out)):
        j = int(np.argwhere(~np.isfinite(out))[0, 0])
        raise InputError(f"event {events[j].description!r}: the statistic is not a finite number")
    return out


def _candidate_thresholds(values: np.ndarray) -> np.ndarray:
    """Distinct pooled values (at most ``MAX_THRESHOLDS`` of them, as quantiles): events "stat > τ"."""
    u = np.unique(values)
    if u.size > MAX_THRESHOLDS:
        u = np.unique(np.quantile(values, np.linspace(0.0, 1.0, MAX_THRESHOLDS), method="inverted_cdf"))
    return u


def _fit_threshold(f0: np.ndarray, f1: np.ndarray, tail: float, delta: float) -> float:
    """τ maximising the Eq. (2) bound on the fit half, with the tail also divided by the number of
    candidates (so the fit-half bounds hold for all candidates at once): a τ in a far tail, where a
    few lucky counts make the ratio look large, is not preferred to a τ with solid counts. Ties: the
    smallest τ."""
    tau = _candidate_thresholds(np.concatenate([f0, f1]))
    n = f0.size
    k0 = n - np.searchsorted(np.sort(f0), tau, side="right")
    k1 = n - np.searchsorted(np.sort(f1), tau, side="right")
    fit_tail = tail / tau.size
    l0, u0 = clopper_pearson(k0, n, fit_tail)
    l1, u1 = clopper_pearson(k1, n, fit_tail)
    score = _four_directions(l0, u0, l1, u1, delta).max(axis=0)
    if not np.any(score > 0):  # no evidence anywhere on the fit half: the pooled median
        return float(np.median(np.concatenate([f0, f1])))
    return float(tau[int(np.argmax(score))])


def _event_result(ev: Event, f0: np.ndarray, f1: np.ndarray, tail: float, delta: float) -> EventResult:
    threshold = None
    if ev.kind == "threshold":
        half = f0.size // 2
        threshold = _fit_threshold(f0[:half], f1[:half], tail, delta)
        f0, f1 = f0[half:] > threshold, f1[half:] > threshold  # test half only
        description = f"{ev.description} > {threshold:g}"
    else:
        f0, f1 = f0 > 0.5, f1 > 0.5
        description = ev.description
    n = int(f0.size)
    k0, k1 = int(f0.sum()), int(f1.sum())
    (l0, l1), (u0, u1) = clopper_pearson(np.array([k0, k1]), n, tail)
    eps = _four_directions(l0, u0, l1, u1, delta)
    best = int(np.argmax(eps >= eps.max() - 1e-12))  # ties (e.g. E and its complement): the first form
    return EventResult(description=description, kind=ev.kind, threshold=threshold, n=n, counts=(k0, k1),
                       p_hat=(k0 / n, k1 / n), bounds=((float(l0), float(u0)), (float(l1), float(u1))),
                       tail=tail, epsilon_lower=float(eps[best]), direction=_DIRECTIONS[best])


def audit(release_fn: ReleaseFn, D0: Any, D1: Any, *, trials: int, event: Event | Sequence[Event],
          rng: np.random.Generator, progress: Progress | None = None, alpha: float = 0.05,
          epsilon: float | None = None, delta: float = 0.0) -> AuditResult:
    """Run ``trials`` releases ``release_fn(D, rng)`` on each of the neighbouring inputs ``D0`` and ``D1``
    and return a (1 − ``alpha``) Clopper–Pearson lower bound on ε (module docstring, Eq. (2)).

    ``event``: one :class:`Event` or several (Bonferroni-corrected: each of the 2K probabilities gets
    a two-sided interval with miscoverage α/(2K)). Threshold events choose τ on the first half of the
    trials and count on the second. ``epsilon``/``delta``: the claimed guarantee (``delta`` also enters
    the bound). ``progress(done, total)`` is called as releases complete (``total = 2·trials``).
    ``rng`` must be a ``numpy.random.Generator``: an audit is a simulation, and a seed reproduces it.
    """
    events = (event,) if isinstance(event, Event) else tuple(event)
    if not events or not all(isinstance(e, Event) for e in events):
        raise InputError("event: expected an Event or a non-empty sequence of Events")
    if not callable(release_fn):
        raise InputError("release_fn: expected a function (data, rng) -> output")
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng: an audit is a simulation; pass a numpy Generator (numpy.random.default_rng(seed))")
    trials = _check_trials(trials, [e.kind for e in events])
    alpha = probability("alpha", alpha)
    delta = 0.0 if delta in (None, 0, 0.0) else probability("delta", delta)
    claimed = None if epsilon is None else positive("epsilon", epsilon)
    tail = alpha / (4 * len(events))

    total, done = 2 * trials, 0
    every = max(1, total // 200)

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % every == 0 or done == total):
            progress(done, total)

    f0 = _features(release_fn, D0, events, trials, rng, tick)
    f1 = _features(release_fn, D1, events, trials, rng, tick)
    results = tuple(_event_result(ev, f0[j], f1[j], tail, delta) for j, ev in enumerate(events))
    best = max(results, key=lambda r: r.epsilon_lower)
    lower = best.epsilon_lower
    return AuditResult(
        epsilon_lower=lower, epsilon=claimed, delta=delta, alpha=alpha, trials=trials, event=best.description,
        direction=best.direction, n=best.n, counts=best.counts, p_hat=best.p_hat, bounds=best.bounds,
        consistent=True if claimed is None else bool(lower <= claimed), events=results)


def format_result(result: AuditResult, *, title: str = "") -> str:
    """The audit as plain text (CLI and page): every event with its counts, bounds and ε_lower, then the verdict."""
    lines = [title] if title else []
    lines.append(f"notice: {result.notice}")
    lines.append(f"trials: {result.trials} per input; alpha = {result.alpha:g} "
                 f"(Bonferroni over {len(result.events)} event(s): each Clopper–Pearson tail "
                 f"{result.events[0].tail:.3g})")
    for r in result.events:
        (l0, u0), (l1, u1) = r.bounds
        lines.append(f"event: {r.description}" + (" (threshold chosen on the fit half, counted on the test half)"
                                                  if r.kind == "threshold" else ""))
        lines.append(f"  D0: {r.counts[0]}/{r.n} = {r.p_hat[0]:.4f}  CP [{l0:.4f}, {u0:.4f}]")
        lines.append(f"  D1: {r.counts[1]}/{r.n} = {r.p_hat[1]:.4f}  CP [{l1:.4f}, {u1:.4f}]")
        lines.append(f"  ε lower bound {r.epsilon_lower:.4f}  from {r.direction}")
    claim = "none" if result.epsilon is None else f"{result.epsilon:g}" + (
        f" (δ = {result.delta:g})" if result.delta else "")
    lines.append(f"epsilon_lower: {result.epsilon_lower:.4f}  claimed epsilon: {claim}  (best event: {result.event})")
    lines.append(f"verdict: {result.verdict}")
    return "\n".join(lines)

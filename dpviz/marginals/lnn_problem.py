"""The map of one GReM-LNN instance: multipliers λ → residuals α*(λ) → workload marginals μ (Mullins et al.,
"Efficient and Private Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024, App. C, App. F,
Alg. 6). The solver (:mod:`dpviz.marginals.lnn`) runs its dual ascent on it.

Notation (the module docstring of :mod:`dpviz.marginals.lnn`): 𝒲 the workload, 𝒲↓ its downward closure, n_γ
the cells of marginal γ, m_τ the rows of residual τ, S ⊆ 𝒲↓ the measured residuals with their weighted means
z̄_τ and weights c_τ, η the regulariser of the unmeasured ones, D_τ / D⁺_τ the residual maps (App. C).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dpviz.marginals.model import Clique, Domain, downward_closure
from dpviz.marginals.residuals import d_apply, dpinv_apply, residual_cov_solve

__all__ = ["Problem", "quad"]


def quad(domain: Domain, tau: Clique, x: np.ndarray) -> float:
    """xᵀ (D_τD_τᵀ)⁻¹ x (= ‖A_{τ,τ} x‖²)."""
    return float(x @ residual_cov_solve(domain, tau, x))


class Problem:
    """Precomputed structure of one GReM-LNN instance (cliques, scales, measured statistics).

    One round maps λ → α → μ through every (γ, τ ⊆ γ) pair. Instead of 2^{|γ|} separate A⁺_{γ,τ} and A_{γ,τ}
    applications per γ, both passes are subset-lattice transforms over the closure 𝒲↓ (App. C's factorisation
    A_{γ,τ} = ⊗_k (D⁺ | 1/n_k | 1), A⁺_{γ,τ} = ⊗_k (D | 1ᵀ | 1)):

    * λ side: b̃_τ = Σ_{γ⊇τ} (n_τ/n_γ) D_τ S_{γ→τ} λ_γ = n_τ D_τ V_τ with V_τ = Σ_{γ∈𝒲, γ⊇τ} S_{γ→τ}(λ_γ/n_γ)
      (S sums out the γ∖τ axes). V is a superset-sum transform: one attribute k at a time,
      V_σ += S_k V_{σ∪{k}} for every σ ∌ k — |σ ∪ {k}| sums per clique instead of 2^{|γ|}, and D_τ once per τ.
    * α side: n_γ μ_γ = Σ_{τ⊆γ} E_{τ→γ}(n_τ D⁺_τ α_τ) (E broadcasts along γ∖τ): a subset-sum (zeta)
      transform, U_σ += E_k U_{σ−{k}} for every σ ∋ k, one attribute at a time, after D⁺_τ once per τ.

    λ and μ live in one flat buffer each (views per γ), so the projected step and the checks are single array
    operations. The cost is O(Σ_{τ∈𝒲↓} |τ| n_τ) per round, within Thm. 6e's O(Σ_γ |γ| n_γ 2^{|γ|}); the
    result equals the per-pair maps of :mod:`dpviz.marginals.residuals` (tested against them and a QP solver).
    """

    def __init__(self, domain: Domain, workload: list[Clique], measured, eta: float) -> None:
        self.domain = domain
        self.workload = workload
        self.closure = downward_closure(workload)
        self.measured = measured          # τ → (z̄, c, const)
        self.eta = eta
        self.m = {t: domain.residual_size(t) for t in self.closure}
        self.n = {g: domain.size(g) for g in workload}
        self.shape = {t: domain.shape(t) for t in self.closure}
        self.rshape = {t: tuple(domain.sizes[k] - 1 for k in t) for t in self.closure}
        self.ntau = {t: float(domain.size(t)) for t in self.closure}
        # flat layout of the workload cells: μ and λ are one buffer each, γ's block at [start, stop)
        bounds = np.cumsum([0] + [self.n[g] for g in workload])
        self.total_cells = int(bounds[-1])
        self.blocks = {g: (int(bounds[i]), int(bounds[i + 1])) for i, g in enumerate(workload)}
        self.M: np.ndarray | None = None  # the dense affine map, when :meth:`dense` built it
        # lattice transforms, one attribute k at a time (class docstring):
        #   down: (σ, σ ∪ {k}, axis of k in σ ∪ {k});  up: (σ, σ \ {k}, broadcast shape of σ \ {k} inside σ)
        members = set(self.closure)
        attrs = sorted({k for t in self.closure for k in t})
        self.down: list[tuple[Clique, Clique, int]] = []
        self.up: list[tuple[Clique, Clique, tuple[int, ...]]] = []
        for k in attrs:
            for s in self.closure:
                if k in s:
                    child = tuple(a for a in s if a != k)
                    self.up.append((s, child, tuple(1 if a == k else domain.sizes[a] for a in s)))
                else:
                    parent = tuple(sorted(s + (k,)))
                    if parent in members:
                        self.down.append((s, parent, parent.index(k)))

    def views(self, flat: np.ndarray) -> dict[Clique, np.ndarray]:
        """Per-γ views (shape n_γ) of a flat workload-cell buffer."""
        return {g: flat[a:b] for g, (a, b) in self.blocks.items()}

    def btilde(self, lam: Mapping[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """b̃_τ = n_τ D_τ V_τ for every τ ∈ 𝒲↓, flat (m_τ,) (class docstring: the superset-sum transform). Each λ_γ
        may carry trailing axes (shape (n_γ, K): K multiplier vectors mapped at once, e.g. the identity)."""
        tail = next(iter(lam.values())).shape[1:]
        v = {t: np.zeros(self.shape[t] + tail) for t in self.closure}
        for g in self.workload:
            v[g] += lam[g].reshape(self.shape[g] + tail) * (1.0 / self.n[g])
        for s, parent, axis in self.down:
            v[s] += v[parent].sum(axis=axis)
        out = {}
        for t in self.closure:
            x = v[t]
            for ax in range(len(t)):
                x = d_apply(x, axis=ax)
            out[t] = x.reshape((-1,) + tail) * self.ntau[t]
        return out

    def alpha(self, lam: dict[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """α*(λ) = argmin_α ℒ(α, λ) (closed form; module docstring)."""
        out = self.btilde(lam)
        for t, bt in out.items():
            if t in self.measured:
                zbar, c, _ = self.measured[t]
                out[t] = zbar - c * bt
            else:
                out[t] = bt * (-0.5 / self.eta)
        return out

    def marginals(self, alpha: Mapping[Clique, np.ndarray], out: np.ndarray | None = None) -> dict[Clique, np.ndarray]:
        """μ_γ(α) = Σ_{τ⊆γ} A_{γ,τ} α_τ for γ ∈ 𝒲 (written into the flat buffer ``out`` when given). Each α_τ may
        carry trailing axes (shape (m_τ, K), as in :meth:`btilde`)."""
        tail = next(iter(alpha.values())).shape[1:]
        u = {}
        for t in self.closure:
            x = alpha[t].reshape(self.rshape[t] + tail)
            for ax in range(len(t)):
                x = dpinv_apply(x, axis=ax)
            u[t] = x * self.ntau[t]
        for s, child, shape in self.up:
            u[s] += u[child].reshape(shape + tail)
        if out is None:
            out = np.empty((self.total_cells,) + tail)
        mu = self.views(out)
        for g in self.workload:
            np.multiply(u[g].reshape((-1,) + tail), 1.0 / self.n[g], out=mu[g])
        return mu

    # ---- the affine map λ ↦ μ(α*(λ)), dense for small workloads -------------------------------------------
    def dense(self) -> None:
        """Build μ(α*(λ)) = μ₀ − M λ as matrices, once (:data:`dpviz.marginals.lnn.DENSE_MAX_CELLS`).

        Both passes are linear in λ apart from the measured z̄: α = z − C b̃(λ) with z = (z̄_τ on S, 0 elsewhere)
        and C = diag(c_τ on S, 1/(2η) elsewhere), and μ = A α. So B (b̃ = Bλ, Σ m_τ × Σ n_γ) and A (μ = Aα)
        are the two lattice transforms applied to identity matrices, M = A C B (symmetric positive
        semi-definite: the negated Hessian of the concave dual g) and μ₀ = A z. One round is then one
        matrix-vector product of Σ n_γ² multiply-adds instead of Python loops over the closure; the iterates
        equal the lattice ones up to rounding (tests/test_marginals_lnn.py)."""
        sizes = [self.m[t] for t in self.closure]
        bounds = np.cumsum([0] + sizes)
        self.rblocks = {t: (int(bounds[i]), int(bounds[i + 1])) for i, t in enumerate(self.closure)}
        rows = int(bounds[-1])
        b = self.btilde(self.views(np.eye(self.total_cells)))
        B = np.concatenate([b[t] for t in self.closure])
        self.z = np.concatenate([np.asarray(self.measured[t][0], dtype=np.float64) if t in self.measured
                                 else np.zeros(self.m[t]) for t in self.closure])
        self.cvec = np.concatenate([np.full(self.m[t], self.measured[t][1] if t in self.measured
                                            else 0.5 / self.eta) for t in self.closure])
        self.B = B
        eye = np.eye(rows)
        A = np.empty((self.total_cells, rows))
        self.marginals({t: eye[lo:hi] for t, (lo, hi) in self.rblocks.items()}, out=A)
        self.M = A @ (self.cvec[:, None] * B)
        self.mu0 = A @ self.z

    def mu_into(self, lam_flat: np.ndarray, out: np.ndarray) -> None:
        """μ(α*(λ)) for a flat λ, written into ``out`` (dense map when built, else the two lattice passes)."""
        if self.M is not None:
            np.matmul(self.M, lam_flat, out=out)
            np.subtract(self.mu0, out, out=out)
        else:
            self.marginals(self.alpha(self.views(lam_flat)), out=out)

    def alpha_of(self, lam_flat: np.ndarray) -> dict[Clique, np.ndarray]:
        """α*(λ) for a flat λ, per τ (dense map when built)."""
        if self.M is None:
            return self.alpha(self.views(lam_flat))
        a = self.z - self.cvec * (self.B @ lam_flat)
        return {t: a[lo:hi] for t, (lo, hi) in self.rblocks.items()}

    def objective(self, alpha: dict[Clique, np.ndarray]) -> float:
        """F(α) = ½ Σ_{τ∈S} Σ_i (α_τ − z_{τ,i})ᵀK_{τ,i}⁻¹(α_τ − z_{τ,i}) + η Σ_{ν∉S} ‖A_{ν,ν}α_ν‖²."""
        d = self.domain
        data = reg = 0.0
        for t in self.closure:
            if t in self.measured:
                zbar, c, const = self.measured[t]
                data += quad(d, t, alpha[t] - zbar) / c + const
            else:
                reg += quad(d, t, alpha[t])
        return float(0.5 * data + self.eta * reg)

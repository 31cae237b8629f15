"""Command-line flags every capability shares: the noise/budget flags and the two modes.

``simulate`` verbs take ``--seed``; ``release`` verbs refuse it (exit 2, pointing to ``simulate``) and
require ``--output``. Noise flags are the same everywhere: ``--noise laplace|gaussian`` with
``--epsilon`` (Laplace), ``--epsilon --delta`` or ``--rho`` (Gaussian). Release verbs also take
``--ledger PATH`` (:mod:`dpviz.ledger`: the privacy ledger they charge before writing).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dpviz.core.modes import check_seed, fresh_seed
from dpviz.core.noise import FAMILIES, Noise
from dpviz.errors import InputError
from dpviz.ledger import add_ledger_arg

__all__ = ["add_noise_args", "noise_from_args", "add_simulate_args", "add_release_args", "seed_from_args",
           "refuse_seed", "add_ledger_arg"]


def add_noise_args(p: argparse.ArgumentParser, *, epsilon_required: bool = False) -> None:
    p.add_argument("--noise", choices=FAMILIES, default=None,
                   help="noise family (default: laplace; gaussian when --delta or --rho is given)")
    p.add_argument("--epsilon", type=float, required=epsilon_required,
                   help="ε: pure ε-DP with Laplace noise, or (ε, δ)-DP with Gaussian noise and --delta")
    p.add_argument("--delta", type=float, help="δ for Gaussian noise given --epsilon")
    p.add_argument("--rho", type=float, help="ρ for Gaussian noise (ρ-zCDP)")


def noise_from_args(args: argparse.Namespace, *, discrete: bool, default: str = "laplace") -> Noise:
    """The Noise the flags ask for (validated once, in :meth:`Noise.from_params`)."""
    family = args.noise or ("gaussian" if (args.delta is not None or args.rho is not None) else default)
    return Noise.from_params(family, epsilon=args.epsilon, delta=args.delta, rho=args.rho, discrete=discrete)


def add_simulate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=None,
                   help="noise seed (default: fresh entropy, printed); simulation only")


def add_release_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", type=Path, required=True,
                   help="CSV to write atomically (never the input); a OUTPUT.meta.json describes the release")
    p.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    add_ledger_arg(p)  # --ledger PATH (else $DPVIZ_LEDGER, else the default ledger if it exists)


def seed_from_args(args: argparse.Namespace) -> int:
    """The simulation seed: ``--seed`` (validated) or a fresh one."""
    return fresh_seed() if args.seed is None else check_seed(args.seed)


def refuse_seed(args: argparse.Namespace, capability: str) -> None:
    """A release takes no seed: its noise comes from the OS CSPRNG, fresh every run."""
    if getattr(args, "seed", None) is not None:
        raise InputError(f"--seed: a private release draws fresh noise from the OS CSPRNG and takes no seed; "
                         f"for reproducible noise use `python -m dpviz {capability} simulate ... --seed N`")

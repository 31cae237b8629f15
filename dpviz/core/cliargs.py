"""Command-line flags every capability shares: the noise/budget flags and the two modes.

``simulate`` verbs take ``--seed``; ``release`` verbs refuse it (exit 2, pointing to ``simulate``) and
require ``--output``. Noise flags are the same everywhere: ``--noise laplace|gaussian`` with
``--epsilon`` (Laplace), ``--epsilon --delta`` or ``--rho`` (Gaussian). Release verbs also take
``--ledger PATH`` (:mod:`dpviz.ledger`: the privacy ledger they charge before writing) and ``--raw-text``
(text cells written as they are, without the leading ``'`` that keeps spreadsheets from running them:
:func:`dpviz.core.tables.to_csv_text`; a release passes ``raw_text=args.raw_text`` to its writer).

A budget whose noise vanishes (above :data:`dpviz.core.noise.MAX_RELEASE_EPSILON` / ``MAX_RELEASE_RHO``) is
refused by release verbs before any work and makes other verbs print one warning line on stderr
(:func:`checked_noise`). ``--seed`` is checked by argparse (:func:`seed_arg`): a bad seed exits 2 before
anything runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpviz.core.modes import check_seed, fresh_seed
from dpviz.core.noise import (FAMILIES, MAX_RELEASE_EPSILON, MAX_RELEASE_RHO, MAX_SIMULATION_EPSILON, Noise,
                              check_release_budget, check_simulation_budget, vanishing_noise_warning)
from dpviz.errors import InputError
from dpviz.core.charging import add_ledger_arg

__all__ = ["positive_int", "add_records_args", "add_noise_args", "noise_from_args", "checked_noise", "add_simulate_args", "add_release_args",
           "add_seed_arg", "seed_arg", "seed_from_args", "refuse_seed", "add_ledger_arg", "EPSILON_BOUND_HELP"]

EPSILON_BOUND_HELP = (f"a release refuses ε > {MAX_RELEASE_EPSILON:g} (ρ > {MAX_RELEASE_RHO:g}): the noise would "
                      f"vanish; a simulation warns, and refuses ε > {MAX_SIMULATION_EPSILON:g}")
"""The bound on the budget, as stated in every release command's --help."""


def add_noise_args(p: argparse.ArgumentParser, *, epsilon_required: bool = False) -> None:
    p.add_argument("--noise", choices=FAMILIES, default=None,
                   help="noise family (default: laplace; gaussian when --delta or --rho is given)")
    p.add_argument("--epsilon", type=float, required=epsilon_required,
                   help="ε: pure ε-DP with Laplace noise, or (ε, δ)-DP with Gaussian noise and --delta; "
                        + EPSILON_BOUND_HELP)
    p.add_argument("--delta", type=float, help="δ for Gaussian noise given --epsilon")
    p.add_argument("--rho", type=float, help="ρ for Gaussian noise (ρ-zCDP)")


def noise_from_args(args: argparse.Namespace, *, discrete: bool, default: str = "laplace",
                    release: bool | None = None) -> Noise:
    """The Noise the flags ask for (validated once, in :meth:`Noise.from_params`), passed through
    :func:`checked_noise` (refused above the bound in a release, a warning elsewhere)."""
    family = args.noise or ("gaussian" if (args.delta is not None or args.rho is not None) else default)
    noise = Noise.from_params(family, epsilon=args.epsilon, delta=args.delta, rho=args.rho, discrete=discrete)
    return checked_noise(args, noise, release=release)


def checked_noise(args: argparse.Namespace, noise: Noise, *, release: bool | None = None) -> Noise:
    """``noise`` if its budget is allowed. A release (``release=True``, or by default a verb whose parser was
    built by :func:`add_release_args`) refuses a budget above the bound (InputError, before any work); any
    other verb prints one warning line on stderr and goes on (and refuses only a budget above the simulation
    bound, where variances underflow)."""
    if release is None:
        release = bool(getattr(args, "release_verb", False))
    if release:
        check_release_budget(noise)
    else:
        check_simulation_budget(noise)
        warning = vanishing_noise_warning(noise)
        if warning is not None:
            print(f"dpviz: warning: {warning}", file=sys.stderr)
    return noise


def seed_arg(text: str) -> int:
    """argparse ``type`` of ``--seed``: a non-negative integer (:func:`dpviz.core.modes.check_seed`), so a bad seed
    exits 2 with one line before any work."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    try:
        return check_seed(value)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--seed: ")) from None


def add_seed_arg(p: argparse.ArgumentParser, help: str = "noise seed (default: fresh entropy, printed); "
                 "simulation only", **kwargs) -> None:
    """``--seed N`` (validated by :func:`seed_arg`); ``kwargs`` go to ``add_argument`` (e.g. ``default=0``)."""
    p.add_argument("--seed", type=seed_arg, default=kwargs.pop("default", None), help=help, **kwargs)


def add_simulate_args(p: argparse.ArgumentParser) -> None:
    add_seed_arg(p)


def add_release_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", type=Path, required=True,
                   help="CSV to write atomically (never the input); a OUTPUT.meta.json describes the release")
    p.add_argument("--raw-text", action="store_true",
                   help="write text cells as they are: by default a text cell beginning with =, +, -, @, a tab "
                        "or a CR gets a leading ' so that a spreadsheet does not run it as a formula (OWASP CSV "
                        "injection; numbers are never changed)")
    p.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    add_ledger_arg(p)  # --ledger PATH (else $DPVIZ_LEDGER, else the default ledger if it exists)
    p.set_defaults(release_verb=True)  # checked_noise: this verb refuses a budget whose noise vanishes


def seed_from_args(args: argparse.Namespace) -> int:
    """The simulation seed: ``--seed`` (validated) or a fresh one."""
    return fresh_seed() if args.seed is None else check_seed(args.seed)


def refuse_seed(args: argparse.Namespace, capability: str) -> None:
    """A release takes no seed: its noise comes from the OS CSPRNG, fresh every run."""
    if getattr(args, "seed", None) is not None:
        raise InputError(f"--seed: a private release draws fresh noise from the OS CSPRNG and takes no seed; "
                         f"for reproducible noise use `python -m dpviz {capability} simulate ... --seed N`")


def positive_int(text: str) -> int:
    """argparse ``type``: a whole number >= 1 (0, negatives and words exit 2 before any work)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_records_args(p: argparse.ArgumentParser, *, needs: str, person: bool = True) -> None:
    """The records flags every counting command shares (:func:`dpviz.core.records.count_records`):
    ``--person-column`` and ``--max-contributions`` (a person's first K records kept, sensitivity × K) unless
    ``person`` is False, and ``--workers N`` | ``--scheduler ADDRESS`` (count on Dask). ``needs``: the flag that
    turns records on, named in the help (e.g. "with --levels")."""
    if person:
        p.add_argument("--person-column", default=None, metavar="ID", help=f"{needs}: the column naming the person")
        p.add_argument("--max-contributions", type=positive_int, default=None, metavar="K",
                       help=f"{needs} and --person-column: keep a person's first K records (file order; the rest "
                            "dropped, never counted or published); the sensitivity is multiplied by K and the unit "
                            "of privacy is the person")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int, default=None, metavar="N",
                       help=f"{needs}: count on a local Dask cluster of N workers (Parquet input)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help=f"{needs}: count on the Dask scheduler at ADDRESS (tcp://host:8786; Parquet input the "
                            "workers can read)")

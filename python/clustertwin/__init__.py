"""clustertwin: a digital twin of a large GPU training cluster, from Python.

The same libraries as the ``clustertwin`` command line, with the same validation and the same
numbers: every function returns what the matching ``clustertwin ... --json`` command prints, as
Python objects.

    import clustertwin as ct
    s = ct.Scenario.default()                      # 4,096 H100, Llama 3 70B
    s.set("fabric.oversubscription", 2)            # validated at once, like --set
    r = ct.run(s)
    print(r["step_time_s"], r["mfu"])

Errors in the input raise :class:`ScenarioError` (a ``ValueError``) with ``file``, ``field``,
``value`` and ``reason``. Long calls release the GIL and stop on Ctrl-C (``KeyboardInterrupt``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Sequence, Union


class ScenarioError(ValueError):
    """Bad input: a scenario field, an option or a file. Carries where and why."""

    def __init__(self, message: str, file: str = "", field: str = "", value: str = "",
                 reason: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.field = field
        self.value = value
        self.reason = reason


# The compiled half raises ScenarioError (defined above) by name, so import it after.
from . import _clustertwin as _core  # noqa: E402

__all__ = ["Scenario", "ScenarioError", "run", "campaign", "bom", "collective", "sweep",
           "validate"]


def _yaml_value(value: Any) -> str:
    """A Python value as the YAML text `--set key=value` takes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    raise TypeError(f"cannot express {type(value).__name__} {value!r} as a scenario value")


class Scenario:
    """A scenario file (or the embedded default) plus the overrides set on it, in order.

    Each :meth:`set` is validated at once with the same rules and messages as ``--set``; a
    rejected value leaves the scenario unchanged.
    """

    def __init__(self, _native: Any) -> None:
        self._native = _native

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Scenario":
        """Reads a scenario YAML file."""
        return cls(_core._Scenario.load(os.fspath(path)))

    @classmethod
    def default(cls) -> "Scenario":
        """The embedded reference scenario: 4,096 H100 GPUs on a 3-tier fat tree."""
        return cls(_core._Scenario.default())

    def set(self, key: str, value: Any) -> "Scenario":
        """Overrides one dotted field (``"fabric.oversubscription"``); returns self."""
        self._native.set(key, _yaml_value(value))
        return self

    def copy(self) -> "Scenario":
        """An independent scenario with the same file and overrides."""
        twin = Scenario.load(self.path) if self.path else Scenario.default()
        for override in self.overrides:
            key, _, value = override.partition("=")
            twin._native.set(key, value)
        return twin

    def to_yaml(self) -> str:
        """The scenario as YAML, every field written out."""
        return self._native.to_yaml()

    @property
    def path(self) -> str:
        return self._native.path

    @property
    def overrides(self) -> list[str]:
        return list(self._native.overrides)

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def description(self) -> str:
        return self._native.description

    @property
    def gpus(self) -> int:
        return self._native.gpus

    @property
    def has_job(self) -> bool:
        return self._native.has_job

    def __repr__(self) -> str:
        where = self.path or "<default>"
        sets = "".join(f" --set {o}" for o in self.overrides)
        return f"<clustertwin.Scenario {self.name!r} ({self.gpus} GPUs) from {where}{sets}>"


def _check_scenario(scenario: Any) -> Scenario:
    if not isinstance(scenario, Scenario):
        raise TypeError(f"expected a clustertwin.Scenario, got {type(scenario).__name__}")
    return scenario


def run(scenario: Scenario, out: Union[str, os.PathLike, None] = None, engine: str = "native",
        per_rank: bool = False) -> dict:
    """One training step (``clustertwin run --json``): step time, MFU, breakdown (and
    ``time_shares``: the step by kernel class), time to train.

    With ``out``, also writes summary.json, results.h5 and trace.json there.
    """
    s = _check_scenario(scenario)
    return json.loads(_core._run(s._native, os.fspath(out) if out else "", engine, per_rank))


def campaign(scenario: Scenario, trials: int = 100, seed: int = 1, threads: int = 0,
             out: Union[str, os.PathLike, None] = None) -> dict:
    """Monte Carlo of the whole run with failures (``clustertwin campaign --json``)."""
    s = _check_scenario(scenario)
    return json.loads(_core._campaign(s._native, trials, seed, threads,
                                      os.fspath(out) if out else ""))


def bom(scenario: Scenario) -> dict:
    """Bill of materials of the scenario's fabric (``clustertwin bom --json``)."""
    return json.loads(_core._bom(_check_scenario(scenario)._native))


def _sizes_text(sizes: Union[str, int, float, Sequence[Union[int, float]]]) -> str:
    if isinstance(sizes, str):
        return sizes
    if isinstance(sizes, (int, float)):
        return repr(int(sizes))
    return ",".join(repr(int(v)) for v in sizes)


def collective(scenario: Scenario, op: str, nodes: int, gpus_per_node: int = 8,
               sizes: Union[str, int, Sequence[int]] = "32M:16G", algo: str = "auto",
               engine: str = "native") -> dict:
    """A collective on the scenario's cluster resized to nodes x gpus_per_node, like nccl-tests.

    ``sizes`` is ``"FROM:TO"`` (doubling), one size, or a list of byte counts.
    """
    s = _check_scenario(scenario)
    return json.loads(_core._collective(s._native, op, nodes, gpus_per_node, _sizes_text(sizes),
                                        algo, engine))


def _vary_args(vary: Mapping[str, Union[str, Iterable[Any]]]) -> list[str]:
    args = []
    for key, values in vary.items():
        if isinstance(values, str):  # "from:to:step" or "a,b,c", as on the command line
            args.append(f"{key}={values}")
        else:
            args.append(f"{key}=" + ",".join(_yaml_value(v) for v in values))
    return args


def sweep(scenario: Scenario, vary: Mapping[str, Union[str, Iterable[Any]]],
          campaign: bool = False, trials: int = 50, seed: int = 1, threads: int = 0,
          as_frame: Union[bool, None] = None):
    """Capacity planning: every combination of the varied fields (``clustertwin sweep --json``).

    ``vary`` maps a dotted field to a list of values or a ``"from:to:step"`` range. Returns one
    row per point (index, point, status, reason, pareto and the metrics as columns): a pandas
    DataFrame when pandas is installed (or ``as_frame=True``), else a list of dicts.
    """
    s = _check_scenario(scenario)
    points = json.loads(_core._sweep(s._native, _vary_args(vary), campaign, trials, seed,
                                     threads))["points"]
    rows = []
    for p in points:
        row = {k: p[k] for k in ("index", "point", "status", "reason", "pareto")}
        row.update(p["metrics"])
        rows.append(row)
    if as_frame is False:
        return rows
    try:
        import pandas
    except ImportError:
        if as_frame:
            raise
        return rows
    return pandas.DataFrame(rows)


def validate(directory: Union[str, os.PathLike] = "scenarios/validation", threads: int = 0) -> dict:
    """Published runs against the simulation (``clustertwin validate --json``): every scenario
    with a ``validation:`` section under ``directory``, with the error per run and per family,
    the fitted parameters and leave-one-family-out errors, and the same errors grouped by source
    (``by_source``), GPU (``by_gpu``, ``by_gpu_precision``), family and job size (``by_scale``)
    and where the simulated step goes (``by_time_share``)."""
    return json.loads(_core._validate(os.fspath(directory), threads))

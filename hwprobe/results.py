"""A run's directory: measurements appended as they finish, then a tidy table, environment and profile.

measurements.jsonl is flushed after every line, so Ctrl-C or a crashing probe loses nothing measured.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError
from hwprobe.measurement import Measurement

MEASUREMENTS = "measurements.jsonl"
TABLE = "measurements.csv"
ENVIRONMENT = "environment.json"
PROFILE = "profile.json"


def default_root() -> Path:
    return Path(os.environ.get("HWPROBE_RESULTS", "results"))


def new_run_dir(root: Path | str | None, device_label: str) -> Path:
    """Create ``root/<UTC time>-<host>-<device>``; an unwritable root is a one-line input error."""
    root = Path(root) if root is not None else default_root()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", device_label).strip("-").lower()[:40]
    name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{socket.gethostname().split('.')[0]}-{slug}"
    path = root / name
    try:
        path.mkdir(parents=True, exist_ok=False)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except FileExistsError:
        path = root / f"{name}-{os.getpid()}"
        path.mkdir(parents=True)
    except OSError as e:
        raise InputError(f"cannot write results to {str(root)!r}: {e.strerror or e}") from None
    return path


class ResultsWriter:
    def __init__(self, path: Path):
        self.path = path
        self._fh = open(path / MEASUREMENTS, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def append(self, m: Measurement) -> None:
        self._fh.write(json.dumps(m.to_dict(), default=_jsonable) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def write_json(self, name: str, data: dict[str, Any]) -> Path:
        p = self.path / name
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, default=_jsonable) + "\n")
        tmp.replace(p)
        return p

    def close(self) -> None:
        self._fh.close()


def write_table(run_dir: Path, measurements: list[Measurement]) -> Path:
    p = run_dir / TABLE
    tidy_frame(measurements).to_csv(p, index=False)
    return p


def read_measurements(run_dir: Path) -> list[Measurement]:
    """Every complete line of measurements.jsonl (a torn last line from a killed run is skipped)."""
    out = []
    with open(run_dir / MEASUREMENTS, encoding="utf-8") as fh:
        for line in fh:
            try:
                out.append(Measurement.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                continue
    return out


def tidy_frame(measurements: list[Measurement]):
    """One row per measurement, flat columns: what pandas, spreadsheets and other analyzers read."""
    import pandas as pd

    rows = []
    for m in measurements:
        c, t, s = m.clocks, m.theory, m.stats
        rows.append({
            "probe": m.probe, "metric": m.metric, "kind": m.kind, "precision": m.precision,
            "exec_unit": m.exec_unit, "path": m.path, "level": m.level, "value": m.value, "unit": m.unit,
            "best": m.best, "median_s": s.median_s if s else None, "cv": s.cv if s else None,
            "n": s.n if s else None, "sm_mhz": c.sm_mhz if c else None, "mem_mhz": c.mem_mhz if c else None,
            "power_w": c.power_w if c else None, "temp_c": c.temp_c if c else None,
            "throttle": ";".join(c.throttle_reasons) if c else "",
            "energy_per_unit_j": m.energy_per_op_j,
            "theory_at_clock": t.at_clock if t else None, "theory_at_max_clock": t.at_max_clock if t else None,
            "datasheet": t.datasheet if t else None, "fraction_of_theory": m.fraction_of_theory,
            "verified": m.verified, "valid": m.valid, "flags": ";".join(m.flags), "notes": " | ".join(m.notes),
            "params": json.dumps(m.params, default=_jsonable, sort_keys=True),
        })
    return pd.DataFrame(rows)


def environment(device: Any, suite_name: str, argv: list[str] | None = None) -> dict[str, Any]:
    """What produced these numbers: host, device, driver, CUDA and library versions."""
    from importlib import metadata

    from hwprobe import __version__

    libs = {}
    for name in ("numpy", "numba", "pandas", "cupy-cuda13x", "cupy-cuda12x", "cupy", "nvidia-ml-py",
                 "nvmath-python", "torch", "nvidia-cublas", "nvidia-cusparselt-cu13", "nvidia-cusparselt-cu12"):
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    env: dict[str, Any] = {
        "hwprobe_version": __version__, "suite": suite_name, "argv": argv or sys.argv,
        "host": socket.gethostname(), "platform": platform.platform(), "python": sys.version.split()[0],
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "libraries": libs,
        "device": device.to_dict(),
    }
    if getattr(device, "kind", "") == "gpu":
        env["cuda"] = _cuda_versions()
    return env


def _cuda_versions() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        import cupy as cp

        out["runtime"] = cp.cuda.runtime.runtimeGetVersion()
        out["driver"] = cp.cuda.runtime.driverGetVersion()
        out["cublas"] = cp.cuda.cublas.getVersion(cp.cuda.device.get_cublas_handle())
        out["nvrtc"] = cp.cuda.nvrtc.getVersion()
    except Exception as e:  # versions are nice to have; never fail a run on them
        out["error"] = str(e)
    return out


def _jsonable(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)

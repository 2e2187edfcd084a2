"""Which rank of which launch this process is, from the launcher's environment (mpirun/mpiexec of Open MPI, MPICH
or Intel MPI, PMIx, Slurm's srun). Pure and low: the device readers ask it too (hwprobe.distributed runs the
world; this only reads it)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hwprobe.errors import InputError

# (rank, size, local rank, local size) variables per launcher, in order of trust
_LAUNCHERS = (
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("pmix", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
    ("slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", None),
)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int | None = 1        # None: the launcher did not say (found from the hosts after MPI starts)
    host: str = ""
    launcher: str = "none"            # "openmpi" | "mpich" | "pmix" | "slurm" | "none"

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def root(self) -> bool:
        return self.rank == 0

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "size": self.size, "local_rank": self.local_rank, "local_size": self.local_size,
                "host": self.host, "launcher": self.launcher}


def _int(env: Mapping[str, str], key: str | None) -> int | None:
    if not key or key not in env:
        return None
    try:
        return int(env[key])
    except ValueError:
        raise InputError(f"environment variable {key}={env[key]!r} is not a whole number") from None


def detect(env: Mapping[str, str] | None = None, host: str | None = None) -> World:
    """The world as the launcher's variables describe it; a plain run is rank 0 of 1. Slurm counts only
    inside an ``srun`` step (SLURM_STEP_NUM_TASKS), not in the batch script itself."""
    env = os.environ if env is None else env
    host = host or socket.gethostname()
    for name, k_rank, k_size, k_local, k_lsize in _LAUNCHERS:
        rank, size = _int(env, k_rank), _int(env, k_size)
        if rank is None or size is None:
            continue
        if not 0 <= rank < size:
            raise InputError(f"{k_rank}={rank} is outside 0..{k_size}-1={size - 1}")
        local = _int(env, k_local)
        lsize = _int(env, k_lsize)
        return World(rank, size, local if local is not None else 0 if size == 1 else -1,
                     lsize if lsize is not None else (1 if size == 1 else None), host, name)
    return World(host=host)

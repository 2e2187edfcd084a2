"""Record one GPU's NVML health answers as JSON (what hwprobe.health.nvml_reader.Recorded replays in tests).

    python -m hwprobe.probes.health.record 0 "H200 SXM, healthy" > tests/data/nvml/h200-sxm-healthy.json

Reads only, as the health probe does (the PCIe generation again during a short host copy where CuPy is there).
"""

from __future__ import annotations

import sys


def record(index: int, about: str) -> str:
    import pynvml

    from hwprobe.health.nvml_reader import LiveNvml, Recorder, read_gpu

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    rec = Recorder(LiveNvml(pynvml, h))
    try:
        import cupy  # noqa: F401

        from hwprobe.probes.health.verdicts import host_copy_load

        load = host_copy_load(index)
    except ImportError:
        load = None
    read_gpu(rec, device=f"GPU {index}", load=load)
    name = LiveNvml(pynvml, h)("nvmlDeviceGetName")
    return rec.to_json(f"{name}: {about} (recorded by hwprobe.probes.health.record)")


def main(argv: list[str]) -> int:
    if not argv or not argv[0].isdigit():
        sys.stderr.write("usage: python -m hwprobe.probes.health.record GPU_INDEX [ABOUT]\n")
        return 2
    sys.stdout.write(record(int(argv[0]), " ".join(argv[1:]) or "recorded"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""GPU test helpers: a real ProbeContext on device 0 with the NVML sampler."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def gpu_ctx_factory():
    from hwprobe import device, probes
    from hwprobe.specs.live import device_theory
    from hwprobe.timing import sampler_for as _sampler

    dev = device.select("0")
    sampler = _sampler(dev)
    theory = device_theory(dev)

    def make(probe_name: str, quick: bool = True):
        return probes.ProbeContext(target="gpu", device=dev, sampler=sampler, probe_name=probe_name, quick=quick,
                                   theory=theory)

    make.device = dev
    make.theory = theory
    yield make
    sampler.close()

"""hwprobe.probes.imports: heavy imports started on a daemon thread at a run's start (gpu.gemm's and gpu.gemm_fp8's
PyTorch and nvmath linalg, gpu.torch_kernels' transformers), in order, and nothing where the package is missing."""

import importlib
import importlib.util
import types

from hwprobe.probes import imports
from hwprobe.probes.base import _REGISTRY
from hwprobe.probes.compute import cublaslt, f64_copy, fp8, gemm  # noqa: F401  (registers the probes)


def _fake(monkeypatch, names, log):
    real = importlib.import_module

    def fake_import(name, *a, **k):
        if name in names:
            log.append(name)
            return types.ModuleType(name)           # never into sys.modules: other tests must not see it
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name in {n.split(".")[0] for n in names}
                        else None)


def test_modules_import_in_order_on_a_daemon_thread(monkeypatch):
    log = []
    _fake(monkeypatch, {"torch", "nvmath.linalg.advanced"}, log)
    thread = imports.import_ahead("torch", "nvmath.linalg.advanced")
    thread.join(timeout=10)
    assert not thread.is_alive() and thread.daemon and thread.name == "hwprobe-import-torch"
    assert log == ["torch", "nvmath.linalg.advanced"]


def test_a_missing_package_starts_nothing_and_a_failing_import_is_left_to_the_probe(monkeypatch):
    log = []
    _fake(monkeypatch, {"torch", "torch.after"}, log)
    assert imports.import_ahead("transformers") is None
    thread = imports.import_ahead("torch", "nope.sub", "torch.after")     # stops at the first failure, quietly
    thread.join(timeout=10)
    assert log == ["torch"]


def test_the_gemm_probes_start_pytorch_and_nvmath_with_their_compiles(monkeypatch):
    started, compiled = [], []
    monkeypatch.setattr(imports, "import_ahead", lambda *m, **k: started.append(m))
    monkeypatch.setattr(f64_copy, "ahead", lambda dev: compiled.append(dev))
    _REGISTRY["gpu.gemm"].ahead("dev0")
    _REGISTRY["gpu.gemm_fp8"].ahead("dev0")
    assert started == [("torch", "nvmath.linalg.advanced")] * 2 and compiled == ["dev0"]

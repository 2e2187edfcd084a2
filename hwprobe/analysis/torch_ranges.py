"""Per-layer times from PyTorch: wrap each leaf module's forward in a ``record_function`` range named by its
module path (``layer1.0.conv1``), profile, and join the trace to the ONNX export of the same model.

    import torch
    from hwprobe.analysis.torch_ranges import annotate
    handles = annotate(model)                       # leaf modules only: a range per layer
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                            torch.profiler.ProfilerActivity.CPU]) as prof:
        model(x); torch.cuda.synchronize()
    prof.export_chrome_trace("trace.json")
    for h in handles: h.remove()
    # hwprobe analyze model.onnx --profile P --times trace.json

The trace's ``gpu_user_annotation`` ranges hold the kernels each module launched; hwprobe matches a range named
``layer1.0.conv1`` to the ONNX nodes in that module's scope (``/layer1/layer1.0/conv1/Conv`` from the TorchScript
exporter). torch is imported only when ``annotate`` runs: it is never a dependency of hwprobe.
"""

from __future__ import annotations


def annotate(model, leaves_only: bool = True) -> list:
    """Open a ``record_function`` range named by the module path around each (leaf) module's forward; returns
    the hook handles (``h.remove()`` to undo)."""
    import torch

    handles = []
    for name, mod in model.named_modules():
        if not name or (leaves_only and next(mod.children(), None) is not None):
            continue

        def pre(m, _args, _name=name):
            m._hwprobe_range = torch.profiler.record_function(_name)
            m._hwprobe_range.__enter__()

        def post(m, _args, _out):
            rng = getattr(m, "_hwprobe_range", None)
            if rng is not None:
                rng.__exit__(None, None, None)
                m._hwprobe_range = None

        handles += [mod.register_forward_pre_hook(pre), mod.register_forward_hook(post)]
    return handles


def module_path(onnx_name: str) -> str | None:
    """The module path an ONNX node name's scope spells (``/layer1/layer1.0/conv1/Conv`` -> ``layer1.0.conv1``;
    ``/m/encoder/layer.0/attention/self/query/MatMul`` -> ``m.encoder.layer.0.attention.self.query``); None for
    names without a scope."""
    parts = onnx_name.strip("/").split("/")[:-1]
    if not onnx_name.startswith("/") or not parts:
        return None
    path, last = "", ""
    for seg in parts:           # "layer1", "layer1.0": the second names the first's child by its own path
        if last and seg.startswith(last + "."):
            path = path[: len(path) - len(last)] + seg
        else:
            path = f"{path}.{seg}" if path else seg
        last = seg
    return path

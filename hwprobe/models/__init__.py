"""Models as hwprobe reads them, before any profile: a list of layers with the counts a roofline needs
(layers.py), from an ONNX file (onnxfile.py, onnxfold.py), a layer CSV (csvfile.py) or a built-in architecture
(zoo.py, builder.py); the counting conventions (conventions.py); decoder LLM configurations (llm/).

Nothing here prices or places a layer: hwprobe.lowering turns a model into kernels, hwprobe.predict prices them
and hwprobe.analysis puts a model on a profile's roofline. onnx loads lazily.
"""

from __future__ import annotations

from pathlib import Path

from hwprobe.errors import InputError
from hwprobe.models.layers import Layer, Model


def load_model(model: str | Path | Model, batch: int = 1, dims: dict[str, int] | None = None) -> Model:
    """A Model from an ONNX file, a layer CSV or a built-in name; ``dims`` names free ONNX input dimensions."""
    if isinstance(model, Model):
        return model
    if batch < 1:
        raise InputError(f"--batch must be >= 1, got {batch}")
    from hwprobe.models import zoo

    p = Path(model)
    suffix = p.suffix.lower()
    if suffix == ".onnx":
        from hwprobe.models.onnxfile import load_onnx

        return load_onnx(p, batch, dims)
    if suffix == ".csv":
        from hwprobe.models.csvfile import load_csv

        return load_csv(p, batch)
    if zoo.find(str(model)) and not p.exists():
        return zoo.build(str(model), batch)
    if p.exists():
        raise InputError(f"{str(p)!r}: a model is an .onnx file, a layer .csv or a built-in name")
    from hwprobe.models.llm.builtin import CONFIGS

    raise InputError(f"{str(model)!r} is neither a file nor a built-in model; built-ins: {', '.join(zoo.ARCHS)}; "
                     f"LLMs (or a config.json): {', '.join(CONFIGS)}")


__all__ = ["Layer", "Model", "load_model"]

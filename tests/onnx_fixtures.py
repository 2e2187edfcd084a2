"""The FP16 CNN exports the prediction tests read, made from what the repository keeps.

tools/validate_models.py exported each timed model (TorchScript exporter, torch 2.14.1, BN folded into the convs,
FP16, weights stripped) beside the validation runs; those exports left profiles/ with the pruning of 2026-11-27.
Two stand-ins give the same graphs: ``fp16_copy`` of a TorchScript sample in tests/data/onnx (the same exporter
and torch, FP32; it differs from the FP16 export only in element types and 16-39 Identity nodes that launch no
kernel), and ``resnet50``, torchvision's ResNet-50 written as that exporter writes it (the same op counts and
initializer names and dims). Both were checked against the pruned exports (git history keeps them) for ResNet-18
b1/b32, MobileNetV2 b1/b64 and ResNet-50 b1/b8/b64, on the three predict calibrations, 3 runtimes and 2 layouts:
the same kernels in the same order, predicted times within 2e-5, roofline bounds within 1.3e-4 (the Identity
nodes' bytes).
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "onnx"


def fp16_copy(name: str, dst: Path) -> Path:
    """tests/data/onnx/<name>.torchscript.onnx with every FP32 tensor typed FP16 (the weights stay stripped)."""
    import onnx
    from onnx import TensorProto

    m = onnx.load(str(DATA / f"{name}.torchscript.onnx"), load_external_data=False)
    g = m.graph
    for v in [*g.input, *g.output, *g.value_info]:
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.data_type = TensorProto.FLOAT16
            del t.external_data[:]
            t.data_location = TensorProto.DEFAULT
    dst.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(dst))
    return dst


def resnet50(dst: Path, batch: int) -> Path:
    """torchvision's ResNet-50 (v1.5: the stride on the 3x3 conv) at a fixed batch, as the TorchScript exporter
    writes it in eval mode: BN folded into each Conv's bias, FP16, initializers with their dims and no data."""
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    nodes, inits = [], []

    def param(name: str, *dims: int) -> str:
        t = TensorProto(name=name, data_type=TensorProto.FLOAT16)
        t.dims.extend(dims)
        inits.append(t)
        return name

    def conv(x: str, prefix: str, cin: int, cout: int, k: int, stride: int) -> str:
        out = f"/{prefix}/Conv_output_0"
        nodes.append(h.make_node("Conv", [x, param(f"{prefix}.weight", cout, cin, k, k), param(f"{prefix}.bias", cout)],
                                 [out], name=f"/{prefix}/Conv", dilations=[1, 1], group=1, kernel_shape=[k, k],
                                 pads=[k // 2] * 4, strides=[stride, stride]))
        return out

    def op(kind: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(h.make_node(kind, inputs, [f"/{name}/{kind}_output_0"], name=f"/{name}/{kind}", **attrs))
        return f"/{name}/{kind}_output_0"

    x = op("Relu", [conv("input", "conv1", 3, 64, 7, 2)], "relu")
    x = op("MaxPool", [x], "maxpool", ceil_mode=0, dilations=[1, 1], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
           strides=[2, 2])
    cin, n = 64, 0
    for stage, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3)), 1):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 1 else 1
            p = f"layer{stage}.{b}"
            y = op("Relu", [conv(x, f"{p}.conv1", cin, width, 1, 1)], f"relu_{n}_1")
            y = op("Relu", [conv(y, f"{p}.conv2", width, width, 3, stride)], f"relu_{n}_2")
            y = conv(y, f"{p}.conv3", width, 4 * width, 1, 1)
            skip = conv(x, f"{p}.downsample.0", cin, 4 * width, 1, stride) if b == 0 else x
            x = op("Relu", [op("Add", [y, skip], f"add_{n}")], f"relu_{n}_3")
            cin, n = 4 * width, n + 1
    x = op("Flatten", [op("GlobalAveragePool", [x], "avgpool")], "flatten", axis=1)
    nodes.append(h.make_node("Gemm", [x, param("fc.weight", 1000, 2048), param("fc.bias", 1000)], ["output"],
                             name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1))
    graph = h.make_graph(nodes, "main_graph",
                         [h.make_tensor_value_info("input", TensorProto.FLOAT16, [batch, 3, 224, 224])],
                         [h.make_tensor_value_info("output", TensorProto.FLOAT16, [batch, 1000])], inits)
    dst.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="pytorch"), str(dst))
    return dst


def cnn_exports(folder: Path) -> Path:
    """The CNN exports under the names tools/validate_models.py gave them (model-bN.onnx), in ``folder``."""
    for b in (1, 32):
        fp16_copy("resnet18", folder / f"resnet18-b{b}.onnx")
    for b in (1, 64):
        fp16_copy("mobilenet_v2", folder / f"mobilenet_v2-b{b}.onnx")
    for b in (1, 8, 64):
        resnet50(folder / f"resnet50-b{b}.onnx", b)
    return folder

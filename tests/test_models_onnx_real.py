"""Real exports (tests/data/onnx: torch's TorchScript and dynamo exporters, made by tools/make_onnx_samples.py):
every shape is found and the multiply-adds match torch's own FlopCounterMode within 2%."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from hwprobe.errors import InputError  # noqa: E402
from hwprobe.models.onnxfile import load_onnx  # noqa: E402

DATA = Path(__file__).parent / "data" / "onnx"
RECORD = json.loads((DATA / "flops.json").read_text())
SAMPLES = sorted((k, v) for k, v in RECORD["models"].items() if "error" not in v)


def _dims(rec):
    return {k: v for k, v in rec["dims"].items() if k != "batch"}


@pytest.mark.parametrize("tag,rec", SAMPLES, ids=[t for t, _ in SAMPLES])
def test_counts_match_torch_within_2_percent(tag, rec):
    m = load_onnx(DATA / f"{tag}.onnx", rec["input"][1][0], _dims(rec))
    flops = 2 * m.gemm_macs                     # FlopCounterMode: matmul, conv, attention products; 2 per MAC
    assert abs(flops / rec["torch_flops"] - 1) < 0.02, (tag, flops, rec["torch_flops"])
    unresolved = [x for x in m.layers if "shape not inferred" in x.note]
    assert not unresolved, [x.name for x in unresolved[:5]]


def test_both_exporters_were_tried_for_every_model():
    models = {t.split(".")[0] for t in RECORD["models"]}
    for name in models:
        assert {f"{name}.torchscript", f"{name}.dynamo"} <= set(RECORD["models"]), name
    # transformers from both exporters are among the counted samples
    counted = {t for t, _ in SAMPLES}
    assert {"bert.torchscript", "bert.dynamo", "llama.torchscript", "llama.dynamo"} <= counted


def test_torchscript_shape_chains_become_shape_only_layers():
    m = load_onnx(DATA / "bert.torchscript.onnx", 1, {"sequence": 128})
    shape_only = [x for x in m.layers if x.shape_only]
    assert len(shape_only) > 100
    assert {x.source_op for x in shape_only} >= {"Shape", "Gather", "Concat", "Unsqueeze"}
    assert all(x.weights == x.inputs == x.outputs == x.macs == 0 for x in shape_only)
    # the attention products (MatMul of two activations) are counted: 12 layers x 2 x seq^2 x hidden
    act = [x for x in m.layers if x.op == "matmul"]
    assert sum(x.macs for x in act) == 12 * 2 * 128 * 128 * 768


def test_free_dimension_without_a_value_is_said():
    m = load_onnx(DATA / "bert.torchscript.onnx", 1)
    assert any("free input dimension" in n and "sequence" in n for n in m.notes)
    with pytest.raises(InputError, match="no graph input has a free dimension"):
        load_onnx(DATA / "bert.torchscript.onnx", 1, {"seqlen": 128})


def test_sequence_length_scales_the_count():
    a = load_onnx(DATA / "llama.torchscript.onnx", 1, {"sequence": 64}).gemm_macs
    b = load_onnx(DATA / "llama.torchscript.onnx", 1, {"sequence": 128}).gemm_macs
    assert 2 < b / a < 2.2          # linear layers double, attention quadruples


def test_external_data_present_or_absent(tmp_path):
    """The samples' weights live in a deleted external file (absent); with the data written back (present)
    the count is the same."""
    from onnx import numpy_helper

    m = onnx.load(str(DATA / "resnet18.dynamo.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue                                    # small constants (shapes) stayed inside the graph
        arr = np.zeros(tuple(t.dims), dtype=onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
        t.CopyFrom(numpy_helper.from_array(arr, t.name))
    p = tmp_path / "r18.onnx"
    onnx.save_model(m, str(p), save_as_external_data=True, location="r18.data", size_threshold=1024)
    assert (tmp_path / "r18.data").stat().st_size > 40e6
    present = load_onnx(p, 1)
    absent = load_onnx(DATA / "resnet18.dynamo.onnx", 1)
    assert present.gemm_macs == absent.gemm_macs and present.params == absent.params
    assert abs(absent.params / 11689512 - 1) < 1e-3      # torchvision resnet18: 11,689,512 parameters


def test_cli_dim_option(tmp_path):
    base = [sys.executable, "-m", "hwprobe", "analyze", str(DATA / "bert.torchscript.onnx"), "--json"]
    ok = subprocess.run(base + ["--dim", "sequence=128"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["totals"]["macs"] > 11e9
    bad = subprocess.run(base + ["--dim", "sequence"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_module_path_ranges_match_onnx_scopes():
    """torch_ranges names a record_function range by module path; the TorchScript export names nodes by the
    same scope. resnet18.leaf_modules.txt lists torchvision resnet18's leaf modules (named_modules)."""
    from hwprobe.analysis.join import _Index
    from hwprobe.analysis.torch_ranges import module_path

    assert module_path("/layer1/layer1.0/conv1/Conv") == "layer1.0.conv1"
    assert module_path("/m/encoder/layer.0/attention/self/query/MatMul") == "m.encoder.layer.0.attention.self.query"
    assert module_path("node_Conv_293") is None
    m = load_onnx(DATA / "resnet18.torchscript.onnx", 1)
    idx = _Index([x.name for x in m.layers])
    mods = (DATA / "resnet18.leaf_modules.txt").read_text().split()
    convs = [x for x in mods if x.endswith(("conv1", "conv2", "downsample.0", "fc"))]
    assert len(convs) == 21
    for mod in convs:
        hit = idx.match(mod)
        assert len(hit) == 1 and m.layers[hit[0]].op in ("conv", "gemm"), (mod, hit)
    assert sum(m.layers[i].macs for mod in convs for i in idx.match(mod)) == m.gemm_macs

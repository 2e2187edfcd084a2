"""tools/validate_models.py's torch-free parts: weight stripping keeps every dim hwprobe needs (the stripped file
analyzes to the same layers as the full one), small shape tensors stay, external data is dropped; the export order
and model selection; and tools/validate_models_check.py reading a bundle back through hwprobe analyze."""

import io
import json
import tarfile

import numpy as np
import pytest

from tests.helpers import load_tool

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

from hwprobe.models import load_model  # noqa: E402

vm = load_tool("validate_models")
check = load_tool("validate_models_check")


def exported_like():
    """What the TorchScript exporter writes for a conv + flatten + reshape + matmul: big weights, a small int64
    shape initializer that shape inference must read, and a big Constant node."""
    rng = np.random.default_rng(0)
    w = nh.from_array(rng.standard_normal((64, 3, 3, 3)).astype(np.float32), "conv.weight")     # 6912 B
    b = nh.from_array(rng.standard_normal(64).astype(np.float32), "conv.bias")                 # 256 B: kept
    shape = nh.from_array(np.array([2, -1, 64], np.int64), "shape")                             # 24 B: kept
    big = nh.from_array(rng.standard_normal((64, 128)).astype(np.float32), "fc.w")              # 32 KiB
    nodes = [
        h.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv", kernel_shape=[3, 3],
                    pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c"], ["r"], name="relu"),
        h.make_node("Transpose", ["r"], ["t"], name="nhwc", perm=[0, 2, 3, 1]),
        h.make_node("Reshape", ["t", "shape"], ["s"], name="reshape"),
        h.make_node("Constant", [], ["k"], name="kconst", value=big),
        h.make_node("MatMul", ["s", "k"], ["y"], name="fc"),
    ]
    g = h.make_graph(nodes, "exported", [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 16, 16])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], [w, b, shape])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def _layers(path):
    return [(x.name, x.op, x.macs, x.weights, x.inputs, x.outputs, x.modelled) for x in load_model(path).layers]


def test_stripped_file_analyzes_to_the_same_layers(tmp_path):
    full, stripped = tmp_path / "full.onnx", tmp_path / "m-b2.onnx"
    onnx.save(exported_like(), str(full))
    rec = vm.strip_weights(full, stripped)
    assert rec["tensors_stripped"] == 2 and rec["tensors_kept"] == 2          # conv.weight + the Constant
    assert stripped.stat().st_size < full.stat().st_size / 10
    m = onnx.load(str(stripped))
    inits = {t.name: t for t in m.graph.initializer}
    assert list(inits["conv.weight"].dims) == [64, 3, 3, 3] and inits["conv.weight"].data_type == T.FLOAT
    assert not inits["conv.weight"].raw_data and not inits["conv.weight"].float_data
    assert nh.to_array(inits["shape"]).tolist() == [2, -1, 64]               # a shape constant keeps its data
    const = next(a.t for n in m.graph.node if n.op_type == "Constant" for a in n.attribute)
    assert list(const.dims) == [64, 128] and not const.raw_data
    assert any(p.key == "weights" and "stripped" in p.value for p in m.metadata_props)
    want = _layers(full)
    assert _layers(stripped) == want
    mm = [x for x in want if x[0] == "fc"][0]
    assert mm[2] == 2 * 256 * 64 * 128 and mm[6]                              # the Reshape was resolved


def test_external_data_is_dropped_not_read(tmp_path):
    full = tmp_path / "ext.onnx"
    onnx.save(exported_like(), str(full), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.onnx.data", size_threshold=1024)
    (tmp_path / "ext.onnx.data").write_bytes(b"")             # truncated: a reader of the data would fail
    out = tmp_path / "ext-b2.onnx"
    vm.strip_weights(full, out)
    m = onnx.load(str(out))                                   # loads external data by default: none is left
    assert all(t.data_location == T.DEFAULT and not t.external_data for t in m.graph.initializer)
    assert [x for x in _layers(out) if x[0] == "conv"][0][2] == 2 * 64 * 16 * 16 * 27


def test_export_jobs_priority_and_selection():
    specs = vm.select("resnet50,bert_base")
    assert [s.name for s in specs] == ["resnet50", "bert_base"]
    st = vm.Settings(device="cpu", dtype=None, warmup=0, reps=1, quick=False, export=True, dynamo=True,
                     export_batches="all", budget_s=1.0, t0=0.0)
    jobs = [(s.name, b, d) for s, b, d in vm.export_jobs(specs, st)]
    assert jobs == [("resnet50", 1, False), ("bert_base", 1, True), ("resnet50", 8, False), ("resnet50", 64, False),
                    ("bert_base", 32, True), ("bert_base", 1, False), ("bert_base", 32, False)]
    st.export_batches = "first"
    assert [(s.name, b, d) for s, b, d in vm.export_jobs(specs, st)] == [
        ("resnet50", 1, False), ("bert_base", 1, True), ("bert_base", 1, False)]
    st.dynamo = False
    assert [(s.name, b, d) for s, b, d in vm.export_jobs(specs, st)] == [
        ("resnet50", 1, False), ("bert_base", 1, False)]
    cnn, tr = specs
    assert [vm.export_name(cnn, 8, False), vm.export_name(tr, 32, True), vm.export_name(tr, 32, False)] == [
        "resnet50-b8", "bert_base-b32-dynamo", "bert_base-b32-torchscript"]
    with pytest.raises(ValueError, match="unknown model 'resnet5'"):
        vm.select("resnet5")


def test_cli_bad_model_is_one_line(tmp_path, capsys):
    assert vm.main(["--out", str(tmp_path), "--only", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown model 'nope'" in err[0]


def _bundle(tmp_path, onnx_file, results):
    bundle = tmp_path / "validate_models.tar.gz"
    data = json.dumps(results).encode()
    with tarfile.open(bundle, "w:gz") as tar:
        info = tarfile.TarInfo("validate_models.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(onnx_file, arcname=f"onnx/{onnx_file.name}")
    return bundle


def test_check_joins_hwprobe_with_the_measured_case(tmp_path, capsys):
    full, stripped = tmp_path / "full.onnx", tmp_path / "tiny-b2.onnx"
    onnx.save(exported_like(), str(full))
    vm.strip_weights(full, stripped)
    results = {"cases": [
        {"model": "tiny", "batch": 2, "primary": True, "eager": {"median_ms": 0.5},
         "cuda_graph": {"median_ms": 0.25}, "kernels_eager": {"count": 4}},
        {"model": "tiny", "batch": 2, "primary": False, "eager": {"median_ms": 9.0}, "cuda_graph": {"median_ms": 9.0}},
    ]}
    bundle = _bundle(tmp_path, stripped, results)
    assert check.main([str(bundle), "--spec", "H200 SXM", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1
    r = rows[0]
    assert r["file"] == "tiny-b2.onnx" and r["layers"] == 5 and r["not_inferred"] == {}
    assert r["graph_ms"] == 0.25 and r["eager_ms"] == 0.5 and r["kernels"] == 4
    assert r["ratio"] == pytest.approx(r["hwprobe_ms"] / 0.25)


def test_check_unreadable_bundle_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.tar.gz"
    bad.write_bytes(b"not a tar")
    assert check.main([str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_capture_builds_the_eager_masks(monkeypatch):
    """Under CUDA-graph capture transformers built explicit masks (another attention kernel than eager); after
    prefill_as_served it skips them as it does eagerly. Runs where torch and transformers are installed."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import BertConfig, LlamaConfig, masking_utils

    def masks():
        cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                          num_key_value_heads=4, vocab_size=100)
        bc = BertConfig(hidden_size=64, num_attention_heads=4)
        cfg._attn_implementation = bc._attn_implementation = "sdpa"
        x = torch.randn(2, 16, 64)
        causal = masking_utils.create_causal_mask(config=cfg, inputs_embeds=x, attention_mask=None,
                                                  past_key_values=None, position_ids=torch.arange(16)[None])
        return causal, masking_utils.create_bidirectional_mask(config=bc, inputs_embeds=x, attention_mask=None)

    monkeypatch.setattr(masking_utils, "is_tracing", masking_utils.is_tracing)      # undone after the test
    monkeypatch.setattr(masking_utils, "find_packed_sequence_indices", masking_utils.find_packed_sequence_indices)
    assert masks() == (None, None)                                   # eager: flash/is_causal, no mask tensors
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    vm.prefill_as_served()
    assert masks() == (None, None)

"""Export real models to ONNX with both torch exporters, strip the weights, and record torch's own FLOP count.

The samples in tests/data/onnx/ were made with this script (on the CPU, nothing downloaded: HF models are built
from their configs with random weights; torchvision models with weights=None):

    python -m venv /tmp/tv && /tmp/tv/bin/pip install torch torchvision transformers onnx onnxscript
    /tmp/tv/bin/python tools/make_onnx_samples.py tests/data/onnx

Each model is exported twice: ``torch.onnx.export(..., dynamo=False)`` (the TorchScript exporter, which writes
``x.size()`` calls as Shape/Gather/Concat chains) and ``dynamo=True`` (torch.export + onnxscript). Weights are then
written as external data to a file that is deleted: the graph keeps every initializer's dims (what hwprobe
counts) and the sample stays small; it is also the "external data absent" case. ``flops.json`` beside them
holds, per model, torch.utils.flop_counter.FlopCounterMode's total for the same inputs (a multiply-add = 2
FLOPs; matmuls, convolutions and attention products), the exporter, the opset and the free dimensions.
torch is used here only: hwprobe never imports it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SEQ = 128
BATCH = 1


def _hf(kind: str):
    import transformers as tr

    if kind == "bert":
        cfg = tr.BertConfig(attn_implementation="eager")               # bert-base: 12 layers, 768 wide
        return tr.BertModel(cfg, add_pooling_layer=False), cfg.vocab_size
    if kind == "gpt2":
        cfg = tr.GPT2Config(attn_implementation="eager", use_cache=False)  # GPT-2 small: 12 layers, 768 wide
        return tr.GPT2Model(cfg), cfg.vocab_size
    cfg = tr.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=1000, max_position_embeddings=512,
                         attn_implementation="eager")
    return tr.LlamaModel(cfg), cfg.vocab_size


class _Ids:
    """An HF model called with input_ids only, returning the last hidden state (one output to export)."""

    def __new__(cls, model):
        import torch

        class Wrap(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids):
                return self.m(input_ids=input_ids).last_hidden_state

        return Wrap(model)


def models():
    """(name, module, example input, input name, dynamic axes) for each sample."""
    import torch
    import torchvision

    out = []
    for kind in ("bert", "gpt2", "llama"):
        m, vocab = _hf(kind)
        ids = torch.randint(0, vocab, (BATCH, SEQ))
        out.append((f"{kind}", _Ids(m.eval()), ids, "input_ids", {0: "batch", 1: "sequence"}))
    for kind in ("resnet18", "mobilenet_v2"):
        m = getattr(torchvision.models, kind)(weights=None).eval()
        out.append((kind, m, torch.randn(BATCH, 3, 224, 224), "x", {0: "batch"}))
    return out


def torch_flops(module, x) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        module(x)
    return int(fc.get_total_flops())


def export(module, x, name: str, dyn: dict, path: Path, dynamo: bool) -> int:
    import torch

    kw = {"input_names": [name], "output_names": ["y"], "dynamic_axes": {name: dyn}}
    if dynamo:
        torch.onnx.export(module, (x,), str(path), dynamo=True, opset_version=18, **kw)
    else:
        torch.onnx.export(module, (x,), str(path), dynamo=False, opset_version=17, do_constant_folding=True, **kw)
    return 18 if dynamo else 17


def strip(path: Path) -> None:
    """Move every initializer's data to an external file and delete it: dims stay, bytes go. Node doc strings
    and metadata (the dynamo exporter's stack traces) go too: they are most of a stripped graph's size."""
    import onnx

    m = onnx.load(str(path))
    for n in m.graph.node:
        n.doc_string = ""
        del n.metadata_props[:]
    data = path.with_suffix(".onnx.data")
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=data.name,
                    size_threshold=1024)
    data.unlink(missing_ok=True)


def main(out_dir: str) -> None:
    import onnx
    import torch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {"torch": torch.__version__, "onnx": onnx.__version__, "batch": BATCH, "sequence": SEQ, "models": {}}
    for name, module, x, in_name, dyn in models():
        flops = torch_flops(module, x)
        for dynamo in (False, True):
            tag = f"{name}.{'dynamo' if dynamo else 'torchscript'}"
            p = out / f"{tag}.onnx"
            try:
                opset = export(module, x, in_name, dyn, p, dynamo)
            except Exception as e:  # an exporter failing is recorded, not hidden
                record["models"][tag] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
                print(f"{tag}: export failed: {e}", file=sys.stderr)
                continue
            strip(p)
            record["models"][tag] = {"torch_flops": flops, "exporter": "dynamo" if dynamo else "torchscript",
                                     "opset": opset, "input": [in_name, list(x.shape)],
                                     "dims": {v: (BATCH if k == 0 else SEQ) for k, v in dyn.items()},
                                     "bytes": p.stat().st_size}
            print(f"{tag}: {p.stat().st_size} bytes, torch {flops / 1e9:.3f} GFLOP", file=sys.stderr)
    (out / "flops.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/onnx")

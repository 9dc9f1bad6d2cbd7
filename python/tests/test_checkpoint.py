"""Checkpoints both ways: Python's safetensors writer against the C++ save_weights / load_weights."""
import numpy as np
import pytest
import torch

import synattn
import synattn.torch as st
from synattn import _synattn
from synattn import safetensors as sft


def trained_layer(dtype):
    torch.manual_seed(3)
    layer = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.directed(2), per_head=True, views=2,
                                     talking_heads_post=True, dtype=dtype)
    trees = [synattn.Tree([1, -1, 1, 1]), synattn.Tree([-1, 0, 1])]
    b = synattn.bucket_batch(trees, synattn.Bucketing.directed(2))
    buckets = torch.from_numpy(np.stack([b.buckets, b.buckets]))
    x = torch.randn(2, 4, 16, dtype=dtype)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        layer(x, b.lengths, buckets).square().sum().backward()
        opt.step()
    return layer


def cpp_save(path, layer, extra=None):
    names = [n for n, _ in layer.named_parameters()]
    arrays = [p.detach().numpy() for _, p in layer.named_parameters()]
    save = _synattn._save_weights_f32 if layer.dtype == torch.float32 else _synattn._save_weights_f64
    save(str(path), names, arrays, extra or {})


def cpp_load(path, layer):
    names = [n for n, _ in layer.named_parameters()]
    shapes = [list(p.shape) for _, p in layer.named_parameters()]
    load = _synattn._load_weights_f32 if layer.dtype == torch.float32 else _synattn._load_weights_f64
    return load(str(path), names, shapes)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_python_file_is_the_cpp_file_byte_for_byte(tmp_path, dtype):
    layer = trained_layer(dtype)
    layer.save_weights(tmp_path / "py.safetensors", extra={"note": "trained in Python"})
    cpp_save(tmp_path / "cpp.safetensors", layer, {"note": "trained in Python"})
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cpp.safetensors").read_bytes()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_round_trips_bit_for_bit(tmp_path, dtype):
    layer = trained_layer(dtype)
    layer.save_weights(tmp_path / "py.safetensors")
    back = cpp_load(tmp_path / "py.safetensors", layer)  # the C++ reader, all its checks
    for name, p in layer.named_parameters():
        assert np.array_equal(back[name], p.detach().numpy()), name
    # C++ -> Python: a file the C++ side wrote loads into a fresh module exactly.
    cpp_save(tmp_path / "cpp.safetensors", layer)
    fresh = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.directed(2), per_head=True, views=2,
                                     talking_heads_post=True, dtype=dtype)
    meta = fresh.load_weights(tmp_path / "cpp.safetensors")
    assert meta["format"] == "synattn.checkpoint.v1" and meta["step"] == "0"
    for (name, p), (_, q) in zip(layer.named_parameters(), fresh.named_parameters()):
        assert torch.equal(p, q), name
    tensors, _ = sft.load_file(tmp_path / "cpp.safetensors")
    assert set(tensors) == set(layer.state_dict()), "the state_dict keys are the checkpoint's tensor names"
    for k, v in layer.state_dict().items():
        assert tuple(tensors[k].shape) == tuple(v.shape)


def test_load_refuses_another_layout_and_changes_nothing(tmp_path):
    layer = trained_layer(torch.float32)
    layer.save_weights(tmp_path / "w.safetensors")
    other = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.linear(4))
    before = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(ValueError, match="unexpected"):
        other.load_weights(tmp_path / "w.safetensors")
    double = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.directed(2), per_head=True, views=2,
                                      talking_heads_post=True, dtype=torch.float64)
    with pytest.raises(TypeError, match="dtype"):
        double.load_weights(tmp_path / "w.safetensors")
    with pytest.raises(synattn.FormatError, match="dtype|F32|F64"):
        cpp_load(tmp_path / "w.safetensors", double)
    assert all(torch.equal(v, before[k]) for k, v in other.state_dict().items())
    with pytest.raises(ValueError, match="non-finite"):
        with torch.no_grad():
            layer.Wq[0, 0] = float("nan")
        layer.save_weights(tmp_path / "nan.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match="not a safetensors file"):
        sft.load_file(tmp_path / "junk.safetensors")

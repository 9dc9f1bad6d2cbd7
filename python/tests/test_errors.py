"""Every documented refusal raises TypeError / ValueError with the library's message; none crashes."""
import numpy as np
import pytest
import torch

import synattn
import synattn.torch as st
from synattn import _synattn


@pytest.fixture
def setup():
    layer = st.SyntaxBiasedAttention(8, 2, bucketing=synattn.Bucketing.linear(4))
    b = synattn.bucket_batch([synattn.Tree([1, -1, 1]), synattn.Tree([-1, 0])], synattn.Bucketing.linear(4))
    return layer, torch.randn(2, 3, 8), b.lengths, torch.from_numpy(b.buckets)


def test_bad_options_raise_the_librarys_message():
    with pytest.raises(synattn.Error, match="not divisible by heads 3"):
        st.SyntaxBiasedAttention(8, 3)
    with pytest.raises(synattn.Error, match="dropout must be a probability"):
        st.SyntaxBiasedAttention(8, 2, dropout=1.5)
    with pytest.raises(synattn.Error, match="path fused cannot run talking heads"):
        st.SyntaxBiasedAttention(8, 2, path="fused", talking_heads_pre=True)
    with pytest.raises(ValueError, match="unknown option"):
        st.SyntaxBiasedAttention(8, 2, dropuot=0.1)
    with pytest.raises(TypeError, match="option 'causal'"):
        st.SyntaxBiasedAttention(8, 2, causal="yes")
    with pytest.raises(TypeError, match="dtype"):
        st.SyntaxBiasedAttention(8, 2, dtype=torch.float16)
    with pytest.raises(synattn.Error, match="max_distance must be <= 10"):
        synattn.Bucketing.directed(11)
    with pytest.raises(ValueError, match="init must be"):
        st.SyntaxBiasedAttention(8, 2, init="random")


def test_bad_tensors(setup):
    layer, x, lengths, buckets = setup
    with pytest.raises(TypeError, match="dtype torch.float64, expected torch.float32"):
        layer(x.double(), lengths, buckets)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        layer(x.numpy().tolist(), lengths, buckets)
    with pytest.raises(ValueError, match=r"expected \(batch, n, d_model\)"):
        layer(x[0], lengths, buckets)
    with pytest.raises(synattn.Error, match="x"):
        layer(torch.randn(2, 3, 7), lengths, buckets)  # wrong width: the library's check
    with pytest.raises(TypeError, match="expected torch.int8"):
        layer(x, lengths, buckets.long())
    with pytest.raises(ValueError, match=r"'buckets' has shape"):
        layer(x, lengths, buckets[:, :2])
    with pytest.raises(ValueError, match="2 lengths|lengths for a batch"):
        layer(x, [3], buckets)
    with pytest.raises(synattn.Error, match="lies beyond lengths"):
        layer(x, [2, 2], buckets)  # lengths that do not match the bucket block
    with pytest.raises(synattn.Error, match="out of range"):
        bad = buckets.clone()
        bad[0, 0, 0] = 9
        layer(x, lengths, bad)
    with pytest.raises(ValueError, match="syntax bias"):
        layer(x, lengths, None)
    with pytest.raises(synattn.Error, match="non-finite|NaN|nan"):
        y = x.clone()
        y[0, 0, 0] = float("nan")
        layer(y, lengths, buckets)
    # Non-contiguous tensors are made contiguous (the one copy), and give the same result.
    xt = x.transpose(0, 1).contiguous().transpose(0, 1)
    assert not xt.is_contiguous()
    with torch.no_grad():
        assert torch.equal(layer(xt, lengths, buckets), layer(x, lengths, buckets))


def test_gpu_tensors_are_refused(setup):
    layer, x, lengths, buckets = setup
    meta = torch.empty(2, 3, 8, device="meta")  # a device that is not the CPU, without needing a GPU
    with pytest.raises(ValueError, match="on meta"):
        layer(meta, lengths, buckets)
    with pytest.raises(ValueError, match="on meta"):
        layer(x, lengths, torch.empty(2, 3, 3, dtype=torch.int8, device="meta"))


def test_the_kernel_refuses_bad_buffers():
    k = _synattn.AttentionKernelF32({"d_model": 4, "heads": 1})
    params = [np.zeros(s, np.float32) for _, s, _ in k.parameter_infos()]
    x = np.zeros((3, 4), np.float32)
    b = np.zeros((3, 3), np.int8)
    with pytest.raises(TypeError, match="dtype float64, expected float32"):
        k.forward(params, x.astype(np.float64), [3], b)
    with pytest.raises(ValueError, match="not C-contiguous"):
        k.forward(params, np.asfortranarray(np.zeros((3, 4), np.float32)), [3], np.asfortranarray(b))
    with pytest.raises(ValueError, match="got 2 parameters"):
        k.forward(params[:2], x, [3], b)
    with pytest.raises(ValueError, match="parameter 'Wq' has shape"):
        k.forward([np.zeros(3, np.float32)] + params[1:], x, [3], b)
    with pytest.raises(TypeError, match="NumPy array"):
        k.forward(params, "x", [3], b)
    with pytest.raises(ValueError, match="lengths"):
        k.forward(params, x, np.array([3.0]), b)
    out, cache = k.forward(params, x, [3], b)
    k.backward(params, cache, np.ones((3, 4), np.float32))
    with pytest.raises(synattn.Error, match="already|used"):
        k.backward(params, cache, np.ones((3, 4), np.float32))


def test_bad_trees_and_files(tmp_path):
    with pytest.raises(synattn.Error, match="cycle|root"):
        synattn.Tree([1, 0])
    with pytest.raises(synattn.Error, match="out of range"):
        synattn.Tree([5, -1])
    with pytest.raises(ValueError, match="convention"):
        synattn.Tree([1, -1], convention="one_based")
    with pytest.raises(synattn.FormatError, match="cannot open"):
        synattn.read_conllu(tmp_path / "missing.conllu")
    (tmp_path / "bad.conllu").write_text("1\tThe\n\n")
    with pytest.raises(synattn.FormatError, match="bad.conllu:1"):
        synattn.read_conllu(tmp_path / "bad.conllu")
    with pytest.raises(TypeError, match="list of trees"):
        synattn.bucket_batch(synattn.Tree([-1]), synattn.Bucketing.linear(2))
    with pytest.raises(synattn.Error, match="window"):
        synattn.pack_documents([[synattn.Tree([-1])]], synattn.Bucketing.linear(2), window=-1)
    assert issubclass(synattn.Error, ValueError) and issubclass(synattn.FormatError, ValueError)

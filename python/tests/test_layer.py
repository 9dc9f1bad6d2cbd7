"""synattn.torch.SyntaxBiasedAttention: gradients, agreement with plain PyTorch and the golden vectors,
dropout, packed documents, threads, parameters and optimisers."""
import io
import json
import os

import numpy as np
import pytest
import torch

import synattn
import synattn.torch as st
from conftest import GOLDEN
from reference import reference_attention

torch.manual_seed(0)


def random_trees(lengths, rng):
    """A random tree per length: word 0 is the root, every other word hangs from an earlier one, shuffled."""
    trees = []
    for n in lengths:
        order = rng.permutation(n)
        heads = [-1] * n
        for k in range(1, n):
            heads[order[k]] = int(order[rng.integers(0, k)])
        trees.append(synattn.Tree(heads))
    return trees


def base_options():
    # As tests/attention/test_attention_gradcheck.cpp: key size != d_model / heads, value size too.
    return dict(key_size=4, value_size=3, bucketing=synattn.Bucketing.linear(4))


GRID = {
    "shared linear table": {},
    "shared linear table, fused path": dict(path="fused"),
    "per-head log table": dict(per_head=True, bucketing=synattn.Bucketing.log(6, 20, 3)),
    "directed buckets, frozen scale": dict(bucketing=synattn.Bucketing.directed(2), scale_learnable=False),
    "causal": dict(causal=True),
    "talking heads pre and post": dict(talking_heads_pre=True, talking_heads_post=True),
    "frozen decay table": dict(init="linear_decay", table_learnable=False),
    "no syntax bias": dict(syntax_bias=False),
    "fusion: 2 views, per-head weights": dict(views=2, per_head_weights=True),
    "fusion: 3 views, shared per-head table": dict(views=3, shared_table=True, per_head=True),
    "cross-attention": dict(memory_size=5),
}


def make_inputs(layer, lengths, rng, n=None, cross_lengths=None):
    """x, buckets (with V views when the layer fuses), and for cross-attention memory and its buckets."""
    o = layer.options
    n = n or max(lengths)
    dtype = layer.dtype
    B = len(lengths)
    x = torch.randn(B, n, o["d_model"], dtype=dtype)
    bucketing = o.get("bucketing", synattn.Bucketing.linear(10))
    if "memory_size" in o:
        nkv = max(cross_lengths)
        memory = torch.randn(B, nkv, o["memory_size"], dtype=dtype)
        b = rng.integers(0, layer.num_buckets, size=(B, n, nkv)).astype(np.int8)
        for s in range(B):
            b[s, lengths[s]:, :] = -1
            b[s, :, cross_lengths[s]:] = -1
        return x, torch.from_numpy(b), memory
    if not o.get("syntax_bias", True):
        return x, None, None
    views = [synattn.bucket_batch(random_trees(lengths, rng), bucketing, n).buckets for _ in range(layer.views)]
    b = np.stack(views) if layer.views > 1 else views[0]
    return x, torch.from_numpy(b), None


def randomise(layer, rng):
    """Parameters away from their start (the table is zero at first, the mixing the identity)."""
    with torch.no_grad():
        for name, p in layer.named_parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.4, size=tuple(p.shape))).to(p.dtype))
            if name.startswith("mix_"):
                p += torch.eye(p.shape[0], dtype=p.dtype)


def call(layer, x, lengths, buckets, memory, cross_lengths):
    if memory is not None:
        return layer(x, lengths, buckets, memory=memory, memory_lengths=cross_lengths)
    return layer(x, lengths, buckets)


@pytest.mark.parametrize("label", list(GRID))
def test_gradcheck_inputs_and_every_parameter(label):
    rng = np.random.default_rng(1)
    layer = st.SyntaxBiasedAttention(6, 2, dtype=torch.float64, **{**base_options(), **GRID[label]})
    randomise(layer, rng)
    lengths, cross = [5, 3, 1], [4, 2, 3]
    x, buckets, memory = make_inputs(layer, lengths, rng, cross_lengths=cross)
    x.requires_grad_(True)
    inputs = [x] + ([memory.requires_grad_(True)] if memory is not None else [])
    params = [p for p in layer.parameters() if p.requires_grad]
    assert params, "every case has trainable parameters"

    def f(*_):
        return call(layer, x, lengths, buckets, memory, cross)

    # gradcheck perturbs the tensors it is given in place: the layer reads its own Parameters, so passing them
    # checks dL/dparameter for each.
    assert torch.autograd.gradcheck(f, inputs + params, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("label", list(GRID))
def test_matches_plain_pytorch_in_double(label):
    rng = np.random.default_rng(2)
    layer = st.SyntaxBiasedAttention(6, 2, dtype=torch.float64, **{**base_options(), **GRID[label]})
    randomise(layer, rng)
    lengths, cross = [5, 3, 1], [4, 2, 3]
    x, buckets, memory = make_inputs(layer, lengths, rng, cross_lengths=cross)
    x.requires_grad_(True)
    out = call(layer, x, lengths, buckets, memory, cross)
    G = torch.randn_like(out)
    (out * G).sum().backward()
    ref_params = {n: p.detach().clone().requires_grad_(p.requires_grad) for n, p in layer.named_parameters()}
    x2 = x.detach().clone().requires_grad_(True)
    ref = reference_attention(ref_params, layer.options, x2, lengths, buckets, memory, cross)
    (ref * G).sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-10, atol=1e-12)
    for n, p in layer.named_parameters():
        if not p.requires_grad:
            assert p.grad is None
            continue
        # dbk is zero in exact arithmetic (docs/math.md 4.3): both sides hold rounding noise.
        atol = 1e-10 * float(layer.Wk.grad.abs().max()) if n == "bk" else 1e-12
        torch.testing.assert_close(p.grad, ref_params[n].grad, rtol=1e-10, atol=atol, msg=f"gradient of {n}")


def golden_cases():
    return sorted(os.listdir(GOLDEN))


@pytest.mark.parametrize("case", golden_cases())
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_golden_vectors(case, dtype):
    """The C++ tests' golden vectors (tests/golden/mha, from PyTorch autograd): out, dx and every gradient."""
    d = os.path.join(GOLDEN, case)
    c = json.load(open(os.path.join(d, "config.json")))
    a = {name: np.load(os.path.join(d, name + ".npy")) for name in c["arrays"]}
    kind = c["bucketing"]
    if kind == "linear":
        bucketing = synattn.Bucketing.linear(c["max_distance"])
    elif kind == "log":
        bucketing = synattn.Bucketing.log(c["num_buckets"], c["max_distance"], c["exact"])
    else:
        bucketing = synattn.Bucketing.directed(c["max_distance"])
    opts = dict(key_size=c["key_size"], value_size=c["value_size"], bucketing=bucketing, per_head=c["per_head"],
                causal=c["causal"], scale_learnable=c["scale_learnable"], views=c.get("views", 1),
                shared_table=c.get("shared_table", False), per_head_weights=c.get("per_head_weights", False))
    layer = st.SyntaxBiasedAttention(c["d_model"], c["heads"], dtype=dtype, **opts)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            p.copy_(torch.from_numpy(a[name].reshape(p.shape)))
    x = torch.from_numpy(a["x"]).to(dtype).requires_grad_(True)
    out = layer(x, a["lengths"], torch.from_numpy(a["buckets"].astype(np.int8)))
    (out * torch.from_numpy(a["G"]).to(dtype)).sum().backward()
    tol = c["tolerance"]["double_rel" if dtype == torch.float64 else "float_rel"]

    def close(got, want, name, scale=None):
        got = got.detach().double().numpy()
        scale = np.abs(want).max() if scale is None else scale
        assert np.abs(got - want).max() <= tol * max(scale, 1e-30), f"{case} {name}"

    close(out, a["out"], "out")
    close(x.grad, a["dx"], "dx")
    for name, p in layer.named_parameters():
        if not p.requires_grad:
            continue
        want = a["d" + name].reshape(p.shape)
        close(p.grad, want, "d" + name, np.abs(a["dWk"]).max() if name == "bk" else None)


def test_eval_mode_has_no_dropout_and_training_mode_does():
    rng = np.random.default_rng(3)
    layer = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.linear(4), dropout=0.3, dtype=torch.float64)
    randomise(layer, rng)
    x, buckets, _ = make_inputs(layer, [7, 5], rng)
    plain = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.linear(4), dtype=torch.float64)
    plain.load_state_dict(layer.state_dict())
    layer.eval()
    with torch.no_grad():
        want = plain(x, [7, 5], buckets)
        assert torch.equal(layer(x, [7, 5], buckets), want)
    layer.train()
    torch.manual_seed(5)
    a = layer(x, [7, 5], buckets)
    torch.manual_seed(5)
    b = layer(x, [7, 5], buckets)
    c = layer(x, [7, 5], buckets)
    assert torch.equal(a, b), "the same torch seed draws the same mask"
    assert not torch.equal(a, want) and not torch.equal(a, c), "training mode drops"


def test_dropout_gradients_use_the_forward_mask():
    """gradcheck of a training-mode layer with dropout: the backward pass redraws the forward's mask."""
    rng = np.random.default_rng(4)
    layer = st.SyntaxBiasedAttention(6, 2, dtype=torch.float64, dropout=0.25, **base_options())
    randomise(layer, rng)
    x, buckets, _ = make_inputs(layer, [5, 4], rng)
    x.requires_grad_(True)
    torch.manual_seed(11)
    seed_state = torch.get_rng_state()

    def f(x):
        torch.set_rng_state(seed_state)  # one mask for every evaluation
        return layer(x, [5, 4], buckets)

    assert torch.autograd.gradcheck(f, [x], eps=1e-6, atol=1e-7)


def test_packed_documents_match_the_dense_input(ewt_dev):
    rng = np.random.default_rng(5)
    bucketing = synattn.Bucketing.linear(8)
    docs = [ewt_dev[0:5], ewt_dev[5:8]]
    packed = synattn.pack_documents(docs, bucketing, window=1)
    n = max(packed.lengths)
    layer = st.SyntaxBiasedAttention(16, 2, bucketing=bucketing, dtype=torch.float64)
    randomise(layer, rng)
    x = torch.randn(2, n, 16, dtype=torch.float64, requires_grad=True)
    out = layer(x, packed=packed)
    G = torch.randn_like(out)
    (out * G).sum().backward()
    grads = {k: p.grad.clone() for k, p in layer.named_parameters()}
    dx = x.grad.clone()
    layer.zero_grad()
    x.grad = None
    dense = torch.from_numpy(packed.dense(n).reshape(2, n, n))
    out2 = layer(x, packed.lengths, dense)
    (out2 * G).sum().backward()
    torch.testing.assert_close(out, out2, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dx, x.grad, rtol=1e-10, atol=1e-12)
    for k, p in layer.named_parameters():
        torch.testing.assert_close(grads[k], p.grad, rtol=1e-10, atol=1e-10, msg=k)


def test_results_do_not_depend_on_thread_counts():
    rng = np.random.default_rng(6)
    layer = st.SyntaxBiasedAttention(64, 4, bucketing=synattn.Bucketing.linear(6), per_head=True)
    randomise(layer, rng)
    x, buckets, _ = make_inputs(layer, [64, 50, 33, 64], rng)
    results = []
    before = (torch.get_num_threads(), synattn.get_num_threads())
    try:
        for torch_threads, own in [(1, 1), (2, 2), (1, 2), (2, 1)]:
            torch.set_num_threads(torch_threads)
            synattn.set_num_threads(own)
            layer.zero_grad()
            xi = x.clone().requires_grad_(True)
            out = layer(xi, [64, 50, 33, 64], buckets)
            out.square().sum().backward()
            results.append([out.detach(), xi.grad] + [p.grad.clone() for p in layer.parameters()])
    finally:
        torch.set_num_threads(before[0])
        synattn.set_num_threads(before[1])
    for r in results[1:]:
        for a, b in zip(results[0], r):
            assert torch.equal(a, b), "bit-identical at any thread count"


def test_parameters_state_dict_optimiser_and_torch_save(tmp_path):
    rng = np.random.default_rng(7)
    layer = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.linear(4), views=2, talking_heads_pre=True)
    names = [n for n, _ in layer.named_parameters()]
    assert names == ["Wq", "Wk", "Wv", "bq", "bk", "bv", "Wo", "bo", "table", "scale", "view_logits", "mix_pre"]
    assert tuple(layer.Wq.shape) == (16, 16) and tuple(layer.bq.shape) == (16,) and tuple(layer.scale.shape) == (1,)
    assert tuple(layer.table.shape) == (2, 5) and tuple(layer.view_logits.shape) == (2,)
    assert torch.count_nonzero(layer.table) == 0 and float(layer.scale) == 1.0
    assert torch.equal(layer.mix_pre, torch.eye(4))
    x, buckets, _ = make_inputs(layer, [6, 4], rng)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    start = {k: v.clone() for k, v in layer.state_dict().items()}
    for _ in range(3):
        opt.zero_grad()
        layer(x, [6, 4], buckets).square().mean().backward()
        opt.step()
    for k, v in layer.state_dict().items():
        assert not torch.equal(v, start[k]), f"the optimiser moved {k}"
    buf = io.BytesIO()
    torch.save(layer.state_dict(), buf)
    buf.seek(0)
    other = st.SyntaxBiasedAttention(16, 4, bucketing=synattn.Bucketing.linear(4), views=2, talking_heads_pre=True)
    other.load_state_dict(torch.load(buf))
    with torch.no_grad():
        assert torch.equal(other(x, [6, 4], buckets), layer(x, [6, 4], buckets))
    torch.save(layer, tmp_path / "whole.pt")  # the whole module pickles too (the kernels are rebuilt)


def test_same_seed_gives_the_cpp_layers_initial_weights():
    a = st.SyntaxBiasedAttention(16, 4, seed=42)
    b = st.SyntaxBiasedAttention(16, 4, seed=42)
    c = st.SyntaxBiasedAttention(16, 4, seed=43)
    assert torch.equal(a.Wq, b.Wq) and not torch.equal(a.Wq, c.Wq)
    bound = 1 / np.sqrt(16)  # nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert float(a.Wq.abs().max()) <= bound


def test_float64_conversion_and_parameters_in_separate_tensors():
    rng = np.random.default_rng(8)
    layer = st.SyntaxBiasedAttention(8, 2, bucketing=synattn.Bucketing.linear(4))
    randomise(layer, rng)
    x, buckets, _ = make_inputs(layer, [5, 3], rng)
    with torch.no_grad():
        want = layer(x, [5, 3], buckets).double()
    layer.double()
    assert layer.dtype == torch.float64
    assert layer.Wk.data_ptr() == layer.Wq.data_ptr() + layer.Wq.numel() * 8, "repacked after .double()"
    with torch.no_grad():
        got = layer(x.double(), [5, 3], buckets)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    # Parameters in tensors of their own (not adjacent): the kernel stacks Wq, Wk, Wv for the call.
    for name in ["Wq", "Wk", "Wv", "bq", "bk", "bv"]:
        getattr(layer, name).data = getattr(layer, name).data.clone()
    with torch.no_grad():
        assert torch.equal(layer(x.double(), [5, 3], buckets), got)
    xg = x.double().requires_grad_(True)
    layer(xg, [5, 3], buckets).sum().backward()
    assert layer.Wk.grad is not None and torch.isfinite(layer.Wk.grad).all()


def test_contiguous_inputs_are_not_copied():
    """The C++ side reads the tensors' own memory: the output of a layer whose check_finite scans x would
    differ if x were a copy being changed; instead check the NumPy views share memory."""
    x = torch.randn(2, 5, 8)
    assert np.shares_memory(st._array(x, "x", torch.float32, "t"), x.numpy())
    layer = st.SyntaxBiasedAttention(8, 2, bucketing=synattn.Bucketing.linear(4))
    assert np.shares_memory(layer.Wq.detach().numpy(), layer.Wk.detach().numpy()) is False
    assert layer.Wk.data_ptr() == layer.Wq.data_ptr() + 64 * 4, "Wq, Wk, Wv adjacent: read in place"


def test_concurrent_calls_from_threads():
    """The GIL is released during compute and one layer serves several threads (they take turns)."""
    import threading
    rng = np.random.default_rng(9)
    layer = st.SyntaxBiasedAttention(32, 4, bucketing=synattn.Bucketing.linear(4))
    x, buckets, _ = make_inputs(layer, [30, 20], rng)
    with torch.no_grad():
        want = layer(x, [30, 20], buckets)
    got = [None] * 4

    def work(k):
        with torch.no_grad():
            got[k] = layer(x, [30, 20], buckets)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(torch.equal(g, want) for g in got)

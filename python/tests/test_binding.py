"""What the binding does to be cheap per call stays correct: pooled gradient buffers never overwrite a gradient
that is still held, the remembered parameter binding follows the Parameters, lengths in every accepted form
give the same result, and what save_for_backward and @once_differentiable would refuse is refused."""
import numpy as np
import pytest
import torch

import synattn
import synattn.torch as st


def make_case(seed=0, **options):
    torch.manual_seed(seed)
    bucketing = synattn.Bucketing.linear(4)
    layer = st.SyntaxBiasedAttention(16, 2, bucketing=bucketing, **options)
    with torch.no_grad():
        layer.table.normal_()
    b = st.bucket_batch([synattn.Tree([1, -1, 1, 1]), synattn.Tree([-1, 0, 1])], bucketing)
    x = torch.randn(2, 4, 16, requires_grad=True)
    return layer, x, b.lengths, b.buckets


def grads_of(layer, x, lengths, buckets, scale=1.0):
    out = layer(x, lengths, buckets)
    return torch.autograd.grad((out * scale).square().sum(), [x] + list(layer.parameters()))


def test_held_gradients_are_not_overwritten_by_later_backwards():
    layer, x, lengths, buckets = make_case()
    first = grads_of(layer, x, lengths, buckets)
    copies = [g.clone() for g in first]
    # More backward passes with other values: with the first gradients still held, none may reuse their memory.
    for k in range(6):
        grads_of(layer, x, lengths, buckets, scale=2.0 + k)
    for g, c in zip(first, copies):
        assert torch.equal(g, c), "a held gradient was overwritten"


def test_accumulated_grads_are_sums_of_the_steps():
    layer, x, lengths, buckets = make_case(1)
    single = [g.clone() for g in grads_of(layer, x, lengths, buckets)]
    layer.zero_grad(set_to_none=True)
    for _ in range(3):  # .grad takes the first buffer over; the next two add into it
        layer(x, lengths, buckets).square().sum().backward()
    for p, g in zip(layer.parameters(), single[1:]):
        torch.testing.assert_close(p.grad, 3 * g, rtol=1e-5, atol=1e-6)
    # zero_grad(set_to_none=False), torch 1.13's default, keeps one buffer as .grad for good
    layer.zero_grad(set_to_none=False)
    layer(x, lengths, buckets).square().sum().backward()
    for p, g in zip(layer.parameters(), single[1:]):
        torch.testing.assert_close(p.grad, g, rtol=1e-5, atol=1e-6)


def test_the_binding_follows_new_parameter_storage():
    layer, x, lengths, buckets = make_case(2)
    with torch.no_grad():
        before = layer(x, lengths, buckets)
        layer.Wv.data = layer.Wv.data * 2  # new storage: the remembered binding must not be used
        after = layer(x, lengths, buckets)
        layer.Wv.data = layer.Wv.data / 2
        again = layer(x, lengths, buckets)
    assert not torch.equal(before, after)
    torch.testing.assert_close(before, again)
    # An in-place change keeps the storage: seen at once.
    with torch.no_grad():
        layer.Wo.mul_(0)
        assert torch.count_nonzero(layer(x, lengths, buckets)[0] - layer.bo) == 0  # sentence 0 has no padding


def test_lengths_in_every_form_give_the_same_result():
    layer, x, lengths, buckets = make_case(3)
    with torch.no_grad():
        want = layer(x, lengths, buckets)
        for form in ([4, 3], (4, 3), np.array([4, 3], np.int32), np.array([4, 3], np.int64),
                     np.array([4, 3], np.uint8), torch.tensor([4, 3]), torch.tensor([4, 3], dtype=torch.int32),
                     torch.tensor([4, 3, 9, 9])[:2], np.array([4, 9, 3])[::2]):
            assert torch.equal(layer(x, form, buckets), want), repr(form)
        with pytest.raises(ValueError, match="not a length"):
            layer(x, [4, -3], buckets)
        with pytest.raises(ValueError, match="not a length"):
            layer(x, np.array([4, -3], np.int64), buckets)
        with pytest.raises(TypeError, match="lengths"):
            layer(x, torch.tensor([4.0, 3.0]), buckets)
        with pytest.raises(TypeError, match="lengths"):
            layer(x, "43", buckets)


def test_backward_after_an_in_place_change_is_refused():
    layer, x, lengths, buckets = make_case(4)
    out = layer(x, lengths, buckets)
    with torch.no_grad():
        layer.Wq.add_(1.0)  # an optimiser step between forward and backward
    with pytest.raises(RuntimeError, match="modified in place"):
        out.sum().backward()
    frozen, x, lengths, buckets = make_case(5, init="linear_decay", table_learnable=False)
    out = frozen(x, lengths, buckets)
    with torch.no_grad():
        frozen.table.mul_(2)  # a frozen Parameter is read by the backward pass too
    with pytest.raises(RuntimeError, match="modified in place"):
        out.sum().backward()


def test_frozen_parameters_get_no_gradient():
    layer, x, lengths, buckets = make_case(6, init="linear_decay", table_learnable=False)
    layer(x, lengths, buckets).square().sum().backward()
    assert layer.table.grad is None and layer.Wq.grad is not None and x.grad is not None


def test_double_backward_is_refused():
    layer, x, lengths, buckets = make_case(7)
    out = layer(x, lengths, buckets).square().sum()
    with pytest.raises(RuntimeError, match="not differentiable"):
        torch.autograd.grad(out, x, create_graph=True)

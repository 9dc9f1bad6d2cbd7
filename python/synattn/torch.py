"""synattn.torch: the syntax-biased attention layer as a torch.nn.Module.

    layer = synattn.torch.SyntaxBiasedAttention(512, 8, bucketing=synattn.Bucketing.linear(10))
    out = layer(x, lengths, buckets)          # x (B, n, 512); lengths (B,); buckets int8 (B, n, n)
    out.sum().backward()                      # the C++ hand-written backward

Parameters are torch.nn.Parameters named and shaped like the C++ layer's
checkpoint tensors (Wq, Wk, Wv, bq, bk, bv, Wo, bo, table, scale,
view_logits, mix_pre, mix_post; nn.Linear layout, a (1, k) row as (k,)), so
state_dict() keys are the C++ checkpoint's names and save_weights() writes a
file the C++ load_weights() reads (and the reverse), bit for bit.

The forward and backward passes run in the compiled module, which views
the Parameters' and the inputs' memory (tensor.numpy() shares it) and
releases the GIL; nothing is copied for contiguous CPU tensors of the
layer's dtype. The compiled module does not link libtorch: only this file
knows torch, so a torch upgrade needs no rebuild.
"""
import numpy as np
import torch

import synattn
from . import _synattn
from . import safetensors as _st

__all__ = ["SyntaxBiasedAttention", "bucket_batch", "subword_bucket_batch"]

_KERNELS = {torch.float32: _synattn.AttentionKernelF32, torch.float64: _synattn.AttentionKernelF64}


def bucket_batch(trees, bucketing, n_max=None):
    """synattn.bucket_batch with torch tensors: (lengths int64 (B,), buckets int8 (B, n, n), n); no copy."""
    b = synattn.bucket_batch(trees, bucketing, n_max)
    return synattn.BucketBatch(torch.from_numpy(b.lengths.astype(np.int64)), torch.from_numpy(b.buckets), b.n)


def subword_bucket_batch(trees, token_to_word, bucketing, n_max=None):
    """synattn.subword_bucket_batch with torch tensors."""
    b = synattn.subword_bucket_batch(trees, token_to_word, bucketing, n_max)
    return synattn.BucketBatch(torch.from_numpy(b.lengths.astype(np.int64)), torch.from_numpy(b.buckets), b.n)


def _array(t, name, dtype, fn):
    """A CPU tensor of `dtype` as a NumPy view of its memory. Non-contiguous tensors are made contiguous (the
    one copy this layer makes, as torch's own ops do); another dtype or device is refused."""
    if isinstance(t, np.ndarray):
        t = torch.from_numpy(t)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: '{name}' must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"{fn}: '{name}' is on {t.device}; synattn computes on the CPU (move it with .cpu())")
    if t.dtype != dtype:
        raise TypeError(f"{fn}: '{name}' has dtype {t.dtype}, expected {dtype}")
    return t.detach().contiguous().numpy()


def _lengths(lengths, batch, n, fn):
    """Lengths as one integer array (or a list) that the compiled module reads once, in place: a tensor's
    .numpy(), an integer array as it is, a list or tuple as it is."""
    if lengths is None:
        return np.full(batch, n, np.int32)
    if isinstance(lengths, torch.Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype.is_complex or lengths.dtype == torch.bool \
                or lengths.dim() != 1:
            raise TypeError(f"{fn}: 'lengths' must be a 1-D integer tensor, got {lengths.dtype} {tuple(lengths.shape)}")
        lengths = lengths.detach().cpu().numpy()
    elif isinstance(lengths, np.ndarray):
        if lengths.dtype.kind not in "iu" or lengths.ndim != 1:
            raise TypeError(f"{fn}: 'lengths' must be a 1-D integer array, got {lengths.dtype} {lengths.shape}")
    elif not isinstance(lengths, (list, tuple)):
        raise TypeError(f"{fn}: 'lengths' must be a sequence of ints or an integer tensor, "
                        f"got {type(lengths).__name__}")
    if len(lengths) != batch:
        raise ValueError(f"{fn}: {len(lengths)} lengths for a batch of {batch} sequences")
    return lengths


def _buckets(buckets, views, batch, n_q, n_kv, fn):
    """(views * batch * n_q, n_kv) int8 view of the bucket block given as (batch, n_q, n_kv), (views, batch, n_q,
    n_kv) or already flat."""
    if buckets is None:
        return None
    if isinstance(buckets, torch.Tensor):
        if buckets.device.type != "cpu":
            raise ValueError(f"{fn}: 'buckets' is on {buckets.device}; synattn computes on the CPU")
        if buckets.dtype != torch.int8:
            raise TypeError(f"{fn}: 'buckets' has dtype {buckets.dtype}, expected torch.int8")
        b = buckets.contiguous().numpy()
    elif isinstance(buckets, np.ndarray):
        if buckets.dtype != np.int8:
            raise TypeError(f"{fn}: 'buckets' has dtype {buckets.dtype}, expected int8")
        b = np.ascontiguousarray(buckets)
    else:
        raise TypeError(f"{fn}: 'buckets' must be an int8 tensor or array, got {type(buckets).__name__}")
    want = (views, batch, n_q, n_kv) if views > 1 else (batch, n_q, n_kv)
    if b.shape != want and b.shape != (views * batch * n_q, n_kv):
        raise ValueError(f"{fn}: 'buckets' has shape {tuple(b.shape)}, expected {want}"
                         + (f" (the layer fuses {views} tree views)" if views > 1 else ""))
    return b.reshape(views * batch * n_q, n_kv)


def _versions(x, memory, params):
    """The version counters autograd's saved tensors would check (every Parameter's: the frozen ones are read by
    the backward pass too)."""
    return x._version, None if memory is None else memory._version, [p._version for p in params]


class _AttentionFunction(torch.autograd.Function):
    """Forward and backward in C++. The cache of a forward pass serves one backward pass (the C++ layer refuses
    it a second time); a second backward of a retained graph (torch.autograd.gradcheck does that) replays the
    forward first, which draws the same dropout mask from the same seed, so it gives the same gradients.

    Inputs: the call (kernel, args, the Parameters' NumPy views), x, memory (or None) and the Parameters that
    need a gradient (the others are not autograd inputs at all). Nothing goes through save_for_backward: the
    backward pass needs only the C++ cache, and x and memory only for a replay; what save_for_backward would
    add, autograd's refusal after an in-place change, is checked here from the tensors' version counters."""

    @staticmethod
    def forward(ctx, call, x, memory, *trainable):
        kernel, args, arrays, params, trainable_ids = call
        out, cache = kernel.forward_any(arrays, x, memory, args)
        ctx.call, ctx.cache, ctx.x, ctx.memory = call, cache, x, memory
        ctx.versions = _versions(x, memory, params)
        return out

    @staticmethod
    def backward(ctx, dout):
        if torch.is_grad_enabled():
            # What @once_differentiable guards against, without its wrapper: the C++ backward is not itself
            # differentiable, so a create_graph=True backward would silently give no second derivatives.
            raise RuntimeError("SyntaxBiasedAttention: the backward pass is not differentiable "
                               "(create_graph=True / double backward is not supported)")
        x, memory = ctx.x, ctx.memory
        kernel, args, arrays, params, trainable_ids = ctx.call
        if ctx.versions != _versions(x, memory, params):
            raise RuntimeError("SyntaxBiasedAttention.backward: the input, memory or a Parameter was modified in "
                               "place since the forward pass (an optimiser step before backward?); the gradients "
                               "would be of other values")
        if ctx.cache is None:  # used by an earlier backward of this graph: replay the forward
            _, ctx.cache = kernel.forward_any(arrays, x, memory, args)
        cache, ctx.cache = ctx.cache, None
        if dout.dtype != x.dtype:
            raise TypeError(f"SyntaxBiasedAttention.backward: the output gradient has dtype {dout.dtype}, "
                            f"expected {x.dtype}")
        g = dout.detach().contiguous().numpy()
        dx, dmem, views = kernel.kernel.backward(arrays, cache, g.reshape(-1, g.shape[-1]))
        needs = ctx.needs_input_grad
        from_numpy = torch.from_numpy
        grads = [from_numpy(views[i]) for i in trainable_ids]
        dx = from_numpy(dx).view(x.shape) if needs[1] else None
        dmem = from_numpy(dmem).view(memory.shape) if memory is not None and needs[2] else None
        return (None, dx, dmem, *grads)


class _Kernel:
    """One dtype's compiled kernel and the call kinds (self, cross, packed) in one place."""

    def __init__(self, options, dtype):
        self.kernel = _KERNELS[dtype](options)
        self.dtype = dtype

    def forward_any(self, arrays, x, memory, args):
        kind, lengths, buckets, memory_lengths, packed, seed, batch = args
        xa = x.detach().numpy().reshape(-1, x.shape[-1])
        if kind == "self":
            out, cache = self.kernel.forward(arrays, xa, lengths, buckets, seed, True)
        elif kind == "cross":
            ma = memory.detach().numpy().reshape(-1, memory.shape[-1])
            out, cache = self.kernel.forward_cross(arrays, xa, lengths, ma, memory_lengths, buckets, seed, True)
        else:
            out, cache = self.kernel.forward_packed(arrays, xa, packed, seed, True)
        return torch.from_numpy(out).view(x.shape[0], x.shape[1], -1), cache

    def infer(self, arrays, x, memory, args):
        kind, lengths, buckets, memory_lengths, packed, seed, batch = args
        xa = x.numpy().reshape(-1, x.shape[-1])
        if kind == "self":
            out = self.kernel.forward(arrays, xa, lengths, buckets, -1, False)
        elif kind == "cross":
            ma = memory.numpy().reshape(-1, memory.shape[-1])
            out = self.kernel.forward_cross(arrays, xa, lengths, ma, memory_lengths, buckets, -1, False)
        else:
            out = self.kernel.forward_packed(arrays, xa, packed, -1, False)
        return torch.from_numpy(out).view(x.shape[0], x.shape[1], -1)


class SyntaxBiasedAttention(torch.nn.Module):
    """Multi-head attention with a learnable bias over dependency-tree distance buckets (docs/math.md 4).

    Options are the C++ AttentionOptions' (docs/python.md lists them): d_model, heads, key_size, value_size,
    memory_size (cross-attention), syntax_bias, bucketing (a synattn.Bucketing), per_head, init ('zero',
    'linear_decay', 'exponential_decay'), decay, table_learnable, scale, scale_learnable, views (tree fusion)
    with shared_table, per_head_weights, weights_learnable; causal; talking_heads_pre / _post; dropout (on the
    attention probabilities, in training mode only); check_finite; path ('automatic', 'fused',
    'materialized'); seed (the C++ layer's initialisation: the same seed gives the same weights); dtype
    (torch.float32 or torch.float64)."""

    def __init__(self, d_model, heads, *, bucketing=None, dtype=torch.float32, **options):
        super().__init__()
        if dtype not in _KERNELS:
            raise TypeError(f"SyntaxBiasedAttention: dtype must be torch.float32 or torch.float64, got {dtype}")
        opts = dict(options, d_model=d_model, heads=heads)
        if bucketing is not None:
            opts["bucketing"] = bucketing
        self._options = opts
        self._kernels = {}
        self._arrays_cache = None
        kernel = self._kernel(dtype)
        self._infos = kernel.kernel.parameter_infos()
        flat = torch.from_numpy(kernel.kernel.initial_parameters())
        at = 0
        for name, shape, trainable in self._infos:
            n = int(np.prod(shape))
            self.register_parameter(name, torch.nn.Parameter(flat[at:at + n].view(shape), requires_grad=trainable))
            at += n
        self._repack()

    # ---- properties of the C++ layer ----
    @property
    def options(self):
        return dict(self._options)

    @property
    def d_model(self):
        return self._options["d_model"]

    @property
    def heads(self):
        return self._options["heads"]

    @property
    def num_buckets(self):
        return self._kernel(self.dtype).kernel.num_buckets

    @property
    def dtype(self):
        return self.Wq.dtype

    @property
    def views(self):
        return self._options.get("views", 1) if self._options.get("syntax_bias", True) else 1

    def __getstate__(self):
        # The compiled kernels do not pickle; they are rebuilt from the options on first use.
        state = self.__dict__.copy()
        state["_kernels"] = {}
        state["_arrays_cache"] = None
        return state

    def _kernel(self, dtype):
        if dtype not in self._kernels:
            self._kernels[dtype] = _Kernel(self._options, dtype)
        return self._kernels[dtype]

    def _params(self):
        # Registration order is the C++ layer's order; _parameters is a plain dict (getattr on a Module is slow).
        return list(self._parameters.values())

    def _arrays(self, params):
        """NumPy views of the Parameters, cached while their storage stays where it is (an optimiser's in-place
        step keeps it; .data = ..., .double() or load_state_dict(assign) move it, and the views are rebuilt)."""
        key = tuple(p.data_ptr() for p in params) + (params[0].dtype,)
        if self._arrays_cache is None or self._arrays_cache[0] != key:
            self._arrays_cache = (key, [p.detach().numpy() for p in params])
        return self._arrays_cache[1]

    def _repack(self):
        """Lays the parameters out in one flat buffer in the C++ order, so Wq/Wk/Wv and bq/bk/bv are adjacent
        and the kernel reads them in place (else it copies those three each call). .data is replaced, not the
        Parameters, so optimisers keep their references."""
        params = self._params()
        if any(p.device.type != "cpu" for p in params):
            return
        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1) for p in params])
            at = 0
            for p in params:
                n = p.numel()
                p.data = flat[at:at + n].view(p.shape)
                at += n

    def _apply(self, fn):
        # .double(), .float(), .to(...) give every Parameter new storage: pack it again.
        out = super()._apply(fn)
        self._repack()
        return out

    def extra_repr(self):
        o = self._options
        b = o.get("bucketing")
        return f"d_model={o['d_model']}, heads={o['heads']}" + (f", bucketing={b!r}" if b is not None else "")

    # ---- the forward pass ----
    def forward(self, x, lengths=None, buckets=None, *, memory=None, memory_lengths=None, packed=None):
        """x (B, n, d_model); lengths (B,) words per sequence (None: all n); buckets int8 (B, n, n) — (V, B, n,
        n) with V tree views — from synattn.bucket_batch, -1 masking a pair. Cross-attention: memory (B, n_kv,
        memory_size), memory_lengths, buckets (B, n, n_kv). Packed documents: packed=synattn.pack_documents(...)
        (x (B, n, d_model), the lengths are the packed ones; the fused, linear-memory path)."""
        fn = "SyntaxBiasedAttention.forward"
        params = self._params()
        dtype = params[0].dtype
        if params[0].device.type != "cpu":
            raise ValueError(f"{fn}: the layer's parameters are not on the CPU; synattn computes on the CPU")
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{fn}: 'x' must be a torch.Tensor, got {type(x).__name__}")
        if x.device.type != "cpu":
            raise ValueError(f"{fn}: 'x' is on {x.device}; synattn computes on the CPU (move it with .cpu())")
        if x.dtype != dtype:
            raise TypeError(f"{fn}: 'x' has dtype {x.dtype}, expected {dtype}")
        if x.dim() != 3:
            raise ValueError(f"{fn}: 'x' has shape {tuple(x.shape)}, expected (batch, n, d_model)")
        batch, n = x.shape[0], x.shape[1]
        x = x.contiguous()
        if packed is not None:
            if not isinstance(packed, synattn.PackedBuckets):
                raise TypeError(f"{fn}: 'packed' must be a synattn.PackedBuckets (synattn.pack_documents)")
            if memory is not None or buckets is not None or lengths is not None:
                raise ValueError(f"{fn}: packed documents take x and packed alone (their lengths and buckets)")
            args = ["packed", None, None, None, packed, -1, batch]
        elif memory is not None:
            if not isinstance(memory, torch.Tensor):
                raise TypeError(f"{fn}: 'memory' must be a torch.Tensor, got {type(memory).__name__}")
            _array(memory, "memory", dtype, fn)
            if memory.dim() != 3 or memory.shape[0] != batch:
                raise ValueError(f"{fn}: 'memory' has shape {tuple(memory.shape)}, expected ({batch}, n_kv, memory_size)")
            memory = memory.contiguous()
            n_kv = memory.shape[1]
            args = ["cross", _lengths(lengths, batch, n, fn), _buckets(buckets, self.views, batch, n, n_kv, fn),
                    _lengths(memory_lengths, batch, n_kv, fn), None, -1, batch]
        else:
            if memory_lengths is not None:
                raise ValueError(f"{fn}: 'memory_lengths' without 'memory'")
            args = ["self", _lengths(lengths, batch, n, fn), _buckets(buckets, self.views, batch, n, n, fn), None,
                    None, -1, batch]
        kernel = self._kernel(dtype)
        dropout = self._options.get("dropout", 0.0)
        if self.training and dropout > 0:
            # From torch's generator, so torch.manual_seed makes a run repeatable.
            args[5] = int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item())
        args = tuple(args)
        trainable_ids = [i for i, p in enumerate(params) if p.requires_grad]
        need_grad = torch.is_grad_enabled() and (
            x.requires_grad or (memory is not None and memory.requires_grad) or bool(trainable_ids))
        arrays = self._arrays(params)
        if not need_grad and args[5] < 0:
            # Inference: infer() keeps nothing for a backward pass.
            with torch.no_grad():
                return kernel.infer(arrays, x.detach(), None if memory is None else memory.detach(), args)
        if not need_grad:
            with torch.no_grad():
                return kernel.forward_any(arrays, x, memory, args)[0]
        # Only the Parameters that get a gradient are autograd inputs: each input costs the Function's fixed
        # work (and the frozen ones would only get None).
        return _AttentionFunction.apply((kernel, args, arrays, params, trainable_ids), x, memory,
                                        *[params[i] for i in trainable_ids])

    # ---- checkpoints ----
    def save_weights(self, path, extra=None):
        """Writes the parameters as a synattn checkpoint (what the C++ save_weights writes; byte for byte)."""
        _st.save_checkpoint(path, {name: getattr(self, name) for name, _, _ in self._infos}, 0, extra)

    def load_weights(self, path):
        """Reads a synattn checkpoint (the C++ save_weights' file, or save_weights') into the parameters, in
        place. Names, shapes and dtype must match; nothing changes when they do not. Returns the metadata."""
        tensors, metadata = _st.load_checkpoint(path)
        names = [name for name, _, _ in self._infos]
        missing = [n for n in names if n not in tensors]
        unexpected = [n for n in tensors if n not in names]
        if missing or unexpected:
            raise ValueError(f"load_weights: {path}: missing {missing}, unexpected {unexpected}")
        dtype = np.float32 if self.dtype == torch.float32 else np.float64
        for name in names:
            p, t = getattr(self, name), tensors[name]
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError(f"load_weights: {path}: '{name}' has shape {list(t.shape)}, expected {list(p.shape)}")
            if t.dtype != dtype:
                raise TypeError(f"load_weights: {path}: '{name}' has dtype {t.dtype}, the layer {np.dtype(dtype)}")
            if not np.isfinite(t).all():
                raise ValueError(f"load_weights: {path}: '{name}' has non-finite values")
        with torch.no_grad():
            for name in names:
                getattr(self, name).copy_(torch.from_numpy(tensors[name]))
        return metadata

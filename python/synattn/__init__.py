"""synattn from Python: syntax-biased attention, dependency trees and their buckets, the parser.

    import synattn, synattn.torch
    sentences = synattn.read_conllu("data/ud/UD_English-EWT/en_ewt-ud-dev.conllu")[:16]
    batch = synattn.bucket_batch(sentences, synattn.Bucketing.linear(10))
    layer = synattn.torch.SyntaxBiasedAttention(64, 4, bucketing=synattn.Bucketing.linear(10))
    out = layer(x, batch.lengths, batch.buckets)          # x: (16, batch.n, 64)

Everything is computed by the C++ library (the compiled module _synattn);
this package only converts. The core needs NumPy alone; synattn.torch adds
the torch.nn.Module. Errors from the library are synattn.Error (a
ValueError) and synattn.FormatError (a ValueError: a malformed file) with the
library's message.
"""
import os
from collections import namedtuple

import numpy as np

from . import _synattn
from ._synattn import (  # noqa: F401  (the public names)
    Bucketing,
    BucketKind,
    ConlluSentence,
    Document,
    Error,
    PackedBuckets,
    ParsedSentence,
    FormatError,
    Sentence,
    Token,
    Tree,
    Word,
    get_num_threads,
    piece_to_word,
    set_num_threads,
    token_to_word_from_spans,
)

__all__ = [
    "Bucketing", "BucketKind", "BucketBatch", "ConlluSentence", "Document", "Error", "PackedBuckets", "ParsedSentence",
    "FormatError", "Parser", "Pipeline", "Sentence", "Token", "Tree", "Word", "bucket_batch", "get_num_threads",
    "load_parser", "load_pipeline", "pack_documents", "parse", "piece_to_word", "read_conllu", "set_num_threads",
    "subword_bucket_batch", "to_tree", "token_to_word_from_spans",
]
__version__ = "0.1.0"

# The exception's old name, kept for one release (the C++ side keeps a
# deprecated alias likewise).
ParseError = FormatError

# lengths: int32 (batch,); buckets: int8 (batch, n, n), -1 masking a pair; n: the padded length.
BucketBatch = namedtuple("BucketBatch", "lengths buckets n")

_HERE = os.path.dirname(os.path.abspath(__file__))


def _model_path(env_var, file, compiled_default):
    """The shipped model: $ENV, then the package's own models/ (cmake --install and pip put them there), then
    the path compiled into the module (the source tree's models/)."""
    if os.environ.get(env_var):
        return os.environ[env_var]
    mine = os.path.join(_HERE, "models", file)
    if os.path.exists(mine):
        return mine
    return compiled_default()


def read_conllu(path):
    """Every sentence of a CoNLL-U file: ConlluSentence (forms, heads, deprels, upos, tree())."""
    return _synattn.read_conllu(os.fspath(path))


def to_tree(item):
    """A Tree from a Tree, a ConlluSentence, a ParsedSentence, a parsed Sentence, or 0-based heads (root -1)."""
    if isinstance(item, Tree):
        return item
    if isinstance(item, (ConlluSentence, ParsedSentence, Sentence)):
        return item.tree()
    if isinstance(item, (list, tuple, np.ndarray)):
        return Tree([int(h) for h in item])
    raise TypeError(f"to_tree: expected a Tree, ConlluSentence, ParsedSentence, Sentence or a list of heads, "
                    f"got {type(item).__name__}")


def _trees(items, fn):
    if isinstance(items, (Tree, ConlluSentence, ParsedSentence, Sentence)):
        raise TypeError(f"{fn}: expected a list of trees, got one {type(items).__name__}")
    return [to_tree(t) for t in items]


def _batch(result):
    lengths, buckets, n = result
    return BucketBatch(np.asarray(lengths, dtype=np.int32), buckets.reshape(len(lengths), n, n), n)


def bucket_batch(trees, bucketing, n_max=None):
    """The attention layer's tree inputs for a batch of sentences (bias/bucket_batch.hpp): BucketBatch(lengths
    int32 (batch,), buckets int8 (batch, n, n) with -1 on padding pairs, n). n_max pads further (None: the
    longest sentence)."""
    return _batch(_synattn._bucket_batch(_trees(trees, "bucket_batch"), bucketing, -1 if n_max is None else n_max))


def subword_bucket_batch(trees, token_to_word, bucketing, n_max=None):
    """Subword-level buckets (tree/subword.hpp): token t of sentence b belongs to word token_to_word[b][t]
    (-1: a special token, which gets the bucketing's special bucket). A word's pieces share its distances
    and are at distance 0 from each other. Lengths count tokens."""
    return _batch(_synattn._subword_bucket_batch(_trees(trees, "subword_bucket_batch"), list(token_to_word),
                                                 bucketing, -1 if n_max is None else n_max))


def pack_documents(documents, bucketing, window=0, max_tree_distance=-1, root_links=False):
    """Packs documents (each a list of sentences' trees) one per sequence, keeping each sentence's own bucket
    block: pairs across sentences at most `window` sentences apart get the cross-tree bucket, the rest are
    masked (bias/packed_buckets.hpp). The layer then computes only the keys the window leaves visible."""
    docs = [_trees(d, "pack_documents") for d in documents]
    return _synattn.pack_documents(docs, bucketing, window, max_tree_distance, root_links)


_default = {}


def load_parser(path=None):
    """The biaffine parser of a model file (default: the shipped English EWT model)."""
    return _synattn.Parser(os.fspath(path) if path else _model_path(
        "SYNATTN_PARSER_MODEL", "en_ewt.parser.safetensors", _synattn.default_parser_path))


def load_pipeline(tokenizer=None, parser=None):
    """Raw text -> sentences, tokens, words (with byte and character spans) and trees (parse/pipeline.hpp)."""
    t = os.fspath(tokenizer) if tokenizer else _model_path(
        "SYNATTN_TOKENIZER_MODEL", "en_ewt.tokenizer.safetensors", _synattn.default_tokenizer_path)
    p = os.fspath(parser) if parser else _model_path(
        "SYNATTN_PARSER_MODEL", "en_ewt.parser.safetensors", _synattn.default_parser_path)
    return _synattn.Pipeline(t, p)


Parser = _synattn.Parser
Pipeline = _synattn.Pipeline


def parse(data, model=None):
    """Parses with the shipped English models (loaded once) or `model`.

    A str is raw text: the tokenizer splits it into sentences, tokens and words, then the parser gives them
    heads, relations and tags; returns a Document (sentences[k].words[i].span: bytes; .char_span: code
    points, i.e. str indices; sentences[k].tree()). A list of sentences, each a list of word forms, is
    already tokenised; returns one ParsedSentence (heads 1-based, deprels, upos, tree()) per sentence."""
    if isinstance(data, str):
        if model is None:
            model = _default.get("pipeline") or _default.setdefault("pipeline", load_pipeline())
        if not isinstance(model, Pipeline):
            raise TypeError(f"parse: raw text needs a Pipeline, got {type(model).__name__}")
        return model.parse_text(data)
    if isinstance(data, (list, tuple)):
        sentences = [list(s) for s in data]
        for k, s in enumerate(sentences):
            if isinstance(data[k], str) or not all(isinstance(w, str) for w in s):
                raise TypeError(f"parse: sentence {k} must be a list of word forms (str)")
        if model is None:
            model = _default.get("parser") or _default.setdefault("parser", load_parser())
        if isinstance(model, Pipeline):
            raise TypeError("parse: tokenised sentences need a Parser, got a Pipeline")
        return model.parse(sentences)
    raise TypeError(f"parse: expected raw text (str) or a list of tokenised sentences, got {type(data).__name__}")

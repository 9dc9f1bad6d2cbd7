"""Trees, CoNLL-U, bucket batches, packed documents and subword buckets from Python."""
import numpy as np
import pytest
import torch

import synattn
import synattn.torch as st
from conftest import EWT_DEV


def test_read_conllu_reads_every_sentence(ewt_dev):
    with open(EWT_DEV, encoding="utf-8") as f:
        sent_ids = [line for line in f if line.startswith("# sent_id")]
    assert len(ewt_dev) == len(sent_ids) > 2000
    s = ewt_dev[0]
    assert s.sent_id and len(s) == len(s.forms) == len(s.heads) == len(s.deprels) == len(s.upos)
    assert s.heads.count(-1) == 1 and "root" in s.deprels
    assert list(s.tree().heads) == list(s.heads)


def test_tree_distances_by_hand():
    # She reads books: reads is the root.
    t = synattn.Tree([1, -1, 1], name="she reads books")
    assert len(t) == 3 and t.roots == [1] and t.name == "she reads books"
    assert t.distances().tolist() == [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    up, down = t.directed_distances()
    assert up.tolist() == [[0, 1, 1], [0, 0, 0], [1, 1, 0]]
    assert down.tolist() == [[0, 0, 1], [1, 0, 1], [1, 0, 0]]
    assert synattn.Tree([2, 0, 2], convention="conllu").heads == [1, -1, 1]
    assert synattn.Tree([1, 1, 1], convention="root_is_self").heads == [1, -1, 1]


def test_bucket_batch_by_hand():
    trees = [synattn.Tree([1, -1, 1]), synattn.Tree([1, 3, 3, -1, 3])]
    b = synattn.bucket_batch(trees, synattn.Bucketing.linear(2))
    assert b.n == 5 and b.lengths.tolist() == [3, 5] and b.buckets.dtype == np.int8 and b.buckets.shape == (2, 5, 5)
    assert b.buckets[0, :3, :3].tolist() == [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    assert (b.buckets[0, 3:, :] == -1).all() and (b.buckets[0, :, 3:] == -1).all()
    d = trees[1].distances()
    assert (b.buckets[1] == np.minimum(d, 2)).all()
    padded = synattn.bucket_batch(trees, synattn.Bucketing.linear(2), n_max=7)
    assert padded.buckets.shape == (2, 7, 7) and (padded.buckets[:, :5, :5] == b.buckets).all()
    with pytest.raises(synattn.Error, match="n_max|longer|exceeds|fit"):
        synattn.bucket_batch(trees, synattn.Bucketing.linear(2), n_max=4)
    tb = st.bucket_batch(trees, synattn.Bucketing.linear(2))
    assert tb.buckets.dtype == torch.int8 and tb.lengths.tolist() == [3, 5]


def test_bucketings_match_their_formulas(ewt_dev):
    trees = [s.tree() for s in ewt_dev[:20]]
    for bucketing in [synattn.Bucketing.linear(5), synattn.Bucketing.log(8, 32, 4)]:
        b = synattn.bucket_batch(trees, bucketing)
        for k, t in enumerate(trees):
            d = t.distances()
            want = np.vectorize(bucketing.bucket)(d)
            assert (b.buckets[k, :len(t), :len(t)] == want).all(), repr(bucketing)
    directed = synattn.Bucketing.directed(3)
    b = synattn.bucket_batch(trees, directed)
    up, down = trees[3].directed_distances()
    want = np.minimum(up, 3) * 4 + np.minimum(down, 3)
    assert (b.buckets[3, :len(trees[3]), :len(trees[3])] == want).all()
    assert directed.num_buckets == 16 and synattn.Bucketing.linear(5, special_bucket=True).num_buckets == 7


def test_trees_from_several_kinds_of_input(ewt_dev):
    a = synattn.bucket_batch(ewt_dev[:3], synattn.Bucketing.linear(4))
    b = synattn.bucket_batch([s.tree() for s in ewt_dev[:3]], synattn.Bucketing.linear(4))
    c = synattn.bucket_batch([s.heads for s in ewt_dev[:3]], synattn.Bucketing.linear(4))
    assert (a.buckets == b.buckets).all() and (a.buckets == c.buckets).all()


def test_pack_documents(ewt_dev):
    bucketing = synattn.Bucketing.linear(6)
    docs = [ewt_dev[0:3], ewt_dev[3:5]]
    for window in (0, 1):
        p = synattn.pack_documents(docs, bucketing, window=window)
        assert p.sequences == 2 and p.window == window
        assert p.lengths == [sum(len(s) for s in d) for d in docs]
        assert p.block_bytes == sum(len(s) ** 2 for d in docs for s in d)
        dense = p.dense(max(p.lengths)).reshape(2, max(p.lengths), max(p.lengths))
        n0, n1 = len(docs[0][0]), len(docs[0][1])
        own = synattn.bucket_batch([docs[0][0]], bucketing).buckets[0]
        assert (dense[0, :n0, :n0] == own).all()
        cross = dense[0, :n0, n0:n0 + n1]
        assert (cross == (bucketing.num_buckets - 1 if window else -1)).all()
        assert (dense[0, :n0, n0 + n1:p.lengths[0]] == -1).all(), "two sentences apart: masked"


def test_token_to_word_from_spans_by_hand():
    words = [(0, 3), (4, 9), (10, 13)]  # "The houses are"
    tokens = [(0, 0), (0, 3), (4, 9), (4, 7), (7, 9), (10, 13), (13, 13)]
    assert synattn.token_to_word_from_spans(words, tokens) == [-1, 0, 1, 1, 1, 2, -1]
    with pytest.raises(synattn.Error, match="straddles word 0"):
        synattn.token_to_word_from_spans(words, [(2, 6)])
    with pytest.raises(synattn.Error, match="partly outside word 2"):
        synattn.token_to_word_from_spans(words, [(11, 15)])
    with pytest.raises(TypeError):
        synattn.token_to_word_from_spans(words, ["not a span"])


def test_subword_buckets_by_hand():
    # [CLS] She re ##ads books [SEP]: pieces of one word share its distances and are 0 apart.
    tree = synattn.Tree([1, -1, 1])
    tokens = [-1, 0, 1, 1, 2, -1]
    bucketing = synattn.Bucketing.linear(4, special_bucket=True)
    b = synattn.subword_bucket_batch([tree], [tokens], bucketing)
    special = bucketing.num_buckets - 1
    assert b.lengths.tolist() == [6] and b.n == 6
    want = [[special] * 6,
            [special, 0, 1, 1, 2, special],
            [special, 1, 0, 0, 1, special],
            [special, 1, 0, 0, 1, special],
            [special, 2, 1, 1, 0, special],
            [special] * 6]
    assert b.buckets[0].tolist() == want
    with pytest.raises(synattn.Error, match="special"):
        synattn.subword_bucket_batch([tree], [tokens], synattn.Bucketing.linear(4))
    with pytest.raises(synattn.Error, match="out of range"):
        synattn.subword_bucket_batch([tree], [[0, 3]], bucketing)
    d = synattn.subword_bucket_batch([tree], [[0, 1, 1, 2]], synattn.Bucketing.directed(2))
    assert d.buckets[0, 1, 2] == 0 and d.buckets[0, 0, 1] == 1 * 3 + 0  # word 0 to its head: (up 1, down 0)

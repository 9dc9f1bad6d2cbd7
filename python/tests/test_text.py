"""The shipped parser and tokenizer from Python, and subword alignment with a real SentencePiece model."""
import io

import numpy as np
import pytest

import synattn
from conftest import EWT_TRAIN

TEXT = "Dr. Smith's team didn't finish the report. They left early!"


@pytest.fixture(scope="module")
def pipeline():
    return synattn.load_pipeline()


def test_parse_tokenised_sentences():
    parsed = synattn.parse([["The", "cat", "sat", "on", "the", "mat", "."], ["Dogs", "bark", "."]])
    assert len(parsed) == 2
    cat = parsed[0]
    assert len(cat.heads) == len(cat.deprels) == len(cat.upos) == 7
    assert cat.heads.count(0) == 1 and cat.deprels[cat.heads.index(0)] == "root"
    assert cat.heads[1] == 3 and cat.deprels[1] == "nsubj", "cat <- sat, the parser's answer on a plain sentence"
    assert cat.upos[1] == "NOUN"
    b = synattn.bucket_batch(parsed, synattn.Bucketing.linear(8))
    assert b.lengths.tolist() == [7, 3]


def test_parse_raw_text_with_spans(pipeline):
    doc = synattn.parse(TEXT, pipeline)
    assert doc.text == TEXT and len(doc.sentences) == 2
    first = doc.sentences[0]
    forms = first.forms
    assert forms[:3] == ["Dr.", "Smith", "'s"] and "did" in forms and "n't" in forms
    raw = TEXT.encode("utf-8")
    for w in first.words:
        b0, b1 = w.span
        c0, c1 = w.char_span
        assert raw[b0:b1].decode() == TEXT[c0:c1]
    for t in first.tokens:  # tokens are exactly the text
        assert TEXT[t.char_span[0]:t.char_span[1]] == t.form
    tree = first.tree()
    assert len(tree) == len(first.words) and len(tree.roots) == 1
    assert isinstance(synattn.parse(TEXT), synattn.Document), "the default pipeline"


def test_parse_refuses_what_it_cannot_read(pipeline):
    with pytest.raises((TypeError, UnicodeError)):
        pipeline.parse_text("a lone surrogate \ud800 is not UTF-8")
    with pytest.raises(TypeError):
        synattn.parse(42)
    with pytest.raises(TypeError):
        synattn.parse(["not", "nested"])
    with pytest.raises(synattn.FormatError):
        synattn.load_parser("/nonexistent/model.safetensors")


@pytest.fixture(scope="module")
def sentencepiece_model():
    """A tiny unigram model trained on EWT train's first 3,000 '# text' lines (vocab 600: ~2 s)."""
    spm = pytest.importorskip("sentencepiece")
    with open(EWT_TRAIN, encoding="utf-8") as f:
        lines = [line[9:].rstrip("\n") for line in f if line.startswith("# text = ")][:3000]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=600,
                                   model_type="unigram", minloglevel=2)
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def test_piece_to_word_by_hand(pipeline):
    doc = pipeline.parse_text("The teams won.")
    s = doc.sentences[0]
    assert s.forms == ["The", "teams", "won", "."]
    # "▁The" with its space, "▁te" + "ams", "▁won", ".", and an empty special piece.
    pieces = [(0, 3), (3, 6), (6, 9), (9, 13), (13, 14), (14, 14)]
    assert synattn.piece_to_word(doc, s, pieces) == [0, 1, 1, 2, 3, -1]
    with pytest.raises(synattn.Error, match="straddles"):
        synattn.piece_to_word(doc, s, [(10, 14)])  # "won." over two tokens
    with pytest.raises(synattn.Error, match="outside the text"):
        synattn.piece_to_word(doc, s, [(0, 99)])
    assert synattn.piece_to_word(doc, s, [(4, 5)], unit="code_points") == [1]


def test_sentencepiece_pieces_to_subword_buckets(pipeline, sentencepiece_model):
    sp = sentencepiece_model
    doc = pipeline.parse_text(TEXT)
    raw = TEXT.encode("utf-8")
    trees, maps = [], []
    for s in doc.sentences:
        b0, b1 = s.span
        proto = sp.encode(raw[b0:b1].decode("utf-8"), out_type="immutable_proto")
        pieces = [(b0 + p.begin, b0 + p.end) for p in proto.pieces]  # SentencePiece's offsets are bytes
        m = synattn.piece_to_word(doc, s, pieces, unit="bytes")
        assert len(m) == len(pieces) > len(s.words), "a tiny vocabulary splits words"
        assert sorted(set(m) - {-1}) == list(range(len(s.words))), "every word has a piece"
        for (p0, p1), w in zip(pieces, m):
            if w >= 0:  # the piece's text (spaces trimmed) lies in its word's token
                t = next(t for t in s.tokens if t.first_word <= w < t.first_word + t.word_count)
                text = raw[p0:p1].decode().strip()
                assert raw[t.span[0]:t.span[1]].decode().find(text) >= 0
        trees.append(s.tree())
        maps.append(m)
    bucketing = synattn.Bucketing.linear(6, special_bucket=True)
    b = synattn.subword_bucket_batch(trees, maps, bucketing)
    words = synattn.bucket_batch(trees, bucketing)
    for k, m in enumerate(maps):
        for i, wi in enumerate(m):
            for j, wj in enumerate(m):
                if wi >= 0 and wj >= 0:
                    want = 0 if wi == wj else words.buckets[k, wi, wj]
                    assert b.buckets[k, i, j] == want, "a piece inherits its word's distances"
    assert (b.buckets[0, len(maps[0]):, :] == -1).all() or len(maps[0]) == b.n
    assert b.lengths.tolist() == [len(m) for m in maps]
    assert np.issubdtype(b.buckets.dtype, np.int8)


def test_the_python_example_runs(tmp_path):
    import os
    import subprocess
    import sys
    from conftest import ROOT
    script = os.path.join(ROOT, "examples", "python", "syntax_attention_demo.py")
    r = subprocess.run([sys.executable, script, "The cat sat."], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "nsubj" in r.stdout and "wrote" in r.stdout


def test_the_deprel_training_example_runs_one_epoch():
    """examples/python/train_deprel.py: the C++ example's recipe in PyTorch with synattn's layer (one short
    epoch: the whole experiment is the example's to run)."""
    import json
    import os
    import subprocess
    import sys
    from conftest import ROOT
    script = os.path.join(ROOT, "examples", "python", "train_deprel.py")
    r = subprocess.run([sys.executable, script, "--variant", "shared", "--train-size", "64", "--epochs", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["epochs_run"] == 1 and 0 < result["best_dev_accuracy"] < 100
    assert len(result["learned_bias"]) == 2, "one table per layer"

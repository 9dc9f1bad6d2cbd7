// synattn — training a TokenizerModel from a treebank's own text.
//
// The training text is the treebank's, rebuilt from its forms and spaces
// (io/conllu_text.hpp); its gold classes come from where its tokens and
// sentences end (text/segmenter_labels.hpp). Each epoch visits every
// paragraph once, in pieces of `piece_chars` characters with the network's
// context as margin (so training sees what inference sees), shuffled by
// (seed, epoch); the loss is the mean cross-entropy of the five classes over
// the pieces' cores. Characters are replaced by their class at random
// (char_dropout), so that rare and unseen characters are read by their shape.
// The learning rate warms up over `warmup` steps and then falls by lr_decay
// per epoch. After every epoch the dev text is tokenized whole and scored by
// the CoNLL 2018 rules (text/conll18_eval.hpp); the epoch with the best
// selection_score() is kept, and training stops after `patience` epochs
// without a better one.
//
// Every random choice is a function of (seed, epoch, step), and every
// product is thread-count independent, so a run gives the same model at any
// thread count.
#ifndef SYNATTN_TEXT_TOKENIZER_TRAINING_HPP
#define SYNATTN_TEXT_TOKENIZER_TRAINING_HPP

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../train/optimizer.hpp"
#include "../util/random.hpp"
#include "conll18_eval.hpp"
#include "document.hpp"
#include "multiword.hpp"
#include "segmenter_labels.hpp"
#include "tokenizer_model.hpp"
#include "utf8.hpp"

namespace synattn {
namespace text {

struct TokenizerTrainOptions {
  TokenizerOptions model;  // net.num_chars is filled from the training text
  int epochs = 20, patience = 4;
  int piece_chars = 256;        // core characters per training piece
  long long batch_chars = 8192; // core characters per step
  double lr = 2e-3;
  double lr_decay = 0.9;  // the learning rate is multiplied by this after every epoch
  long long warmup = 200;
  double char_dropout = 0.05;
  std::uint64_t seed = 1;
};

// One epoch's record (the JSON lines the program prints).
struct TokenizerEpoch {
  int epoch = 0;
  double loss = 0, seconds = 0;
  Conll18Scores dev;
  bool best = false;
};

// Softmax cross-entropy of rows with weight 1 in `counted` (others ignored):
// returns the mean loss and writes dlogits for that mean.
template <class Scalar>
double segmenter_loss(const RowMajorMatrix<Scalar>& logits, const std::vector<std::int8_t>& labels,
                      const std::vector<char>& counted, RowMajorMatrix<Scalar>& dlogits) {
  const Index N = logits.rows(), K = logits.cols();
  if (K > 64) throw Error("segmenter_loss: at most 64 classes, got " + std::to_string(K));
  dlogits.setZero(N, K);
  long long n = 0;
  for (Index r = 0; r < N; ++r) n += counted[static_cast<std::size_t>(r)] ? 1 : 0;
  if (n == 0) return 0;
  double loss = 0;
  const Scalar inv = Scalar(1) / static_cast<Scalar>(n);
  for (Index r = 0; r < N; ++r) {
    if (!counted[static_cast<std::size_t>(r)]) continue;
    Scalar e[64];
    softmax_row(logits.row(r).data(), K, e);
    const int y = labels[static_cast<std::size_t>(r)];
    loss += -std::log(static_cast<double>(e[y]));
    for (Index k = 0; k < K; ++k) dlogits(r, k) = e[k] * inv;
    dlogits(r, y) -= inv;
  }
  return loss / static_cast<double>(n);
}

class TokenizerTrainer {
 public:
  // What picks the epoch kept: Tokens F1 + Words F1 + Sentences F1 / 5. The
  // sentence score moves by a point from epoch to epoch on a dev set of two
  // thousand sentences (a few dozen boundaries), so at full weight it would
  // pick the epoch by its noise rather than by its tokens and words.
  static double selection_score(const Conll18Scores& s) {
    return s.tokens.f1() + s.words.f1() + 0.2 * s.sentences.f1();
  }

  // `log` receives one line per epoch; `on_epoch` (optional) the record.
  static TokenizerModel train(const Document& train_doc, const Document& dev_doc, TokenizerTrainOptions o,
                              std::ostream* log = nullptr,
                              const std::function<void(const TokenizerEpoch&)>& on_epoch = {}) {
    const DecodedText train_text = decode_utf8(train_doc.text, "training text");
    CharVocabulary vocab = CharVocabulary::build({&train_text.code_points}, o.model.min_char_count);
    o.model.net.num_chars = vocab.size();
    o.model.net.classes = kSegmenterClasses;
    if (o.epochs < 1 || o.patience < 1 || o.piece_chars < 1 || o.batch_chars < 1 || !(o.lr > 0) ||
        !(o.char_dropout >= 0 && o.char_dropout < 1) || !(o.lr_decay > 0 && o.lr_decay <= 1))
      throw Error("TokenizerTrainer: need epochs, patience, piece_chars and batch_chars >= 1, lr > 0, lr_decay in "
                  "(0, 1] and char_dropout in [0, 1)");
    TokenizerModel model(o.model, vocab, MultiwordExpander::learn({&train_doc}), RandomStream(o.seed).derive(1));

    const std::vector<char32_t>& cps = train_text.code_points;
    const std::vector<std::int8_t> classes = gold_classes(train_doc, cps.size());
    std::vector<Piece> pieces;
    for (const Paragraph& p : split_paragraphs(cps))
      for (const Piece& piece : paragraph_pieces(p, o.piece_chars, o.model.net.context())) pieces.push_back(piece);
    if (pieces.empty()) throw Error("TokenizerTrainer: the training text is empty");

    AdamOptions adam;
    adam.lr = o.lr;
    adam.beta2 = 0.98;
    Adam<float> optimizer(adam);
    auto& store = model.net().parameter_store();
    std::vector<float> best_values(static_cast<std::size_t>(store.size()));
    double best_score = -1;
    int since_best = 0;
    long long step = 0;
    const int gap = o.model.net.max_dilation();
    const std::uint32_t drop = drop_threshold(o.char_dropout);
    SegmenterCache<float> cache;
    RowMajorMatrix<float> logits, dlogits;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      const RandomStream epoch_stream = RandomStream(o.seed).derive(100 + static_cast<std::uint64_t>(epoch));
      std::vector<std::size_t> order(pieces.size());
      std::iota(order.begin(), order.end(), std::size_t(0));
      // Fisher-Yates from the epoch's stream.
      for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[static_cast<std::size_t>(epoch_stream.uniform(i) * static_cast<double>(i))]);
      double loss_sum = 0;
      long long batches = 0;
      for (std::size_t first = 0; first < order.size();) {
        std::vector<Piece> batch;
        long long chars = 0;
        while (first < order.size() && (batch.empty() || chars < o.batch_chars)) {
          batch.push_back(pieces[order[first++]]);
          chars += batch.back().core_end - batch.back().core_begin;
        }
        ++step;
        PackedPieces packed = pack_pieces(cps, batch, model.vocabulary(), gap);
        std::vector<std::int8_t> labels(packed.ids.size(), kInside);
        std::vector<char> counted(packed.ids.size(), 0);
        const RandomStream step_stream = epoch_stream.derive(static_cast<std::uint64_t>(step));
        for (std::size_t k = 0; k < batch.size(); ++k) {
          const Piece& p = batch[k];
          for (int c = p.begin; c < p.end; ++c) {
            const auto r = static_cast<std::size_t>(packed.row_of_piece[k] + (c - p.begin));
            if (c >= p.core_begin && c < p.core_end) {
              labels[r] = classes[static_cast<std::size_t>(c)];
              counted[r] = 1;
            }
            const char32_t ch = cps[static_cast<std::size_t>(c)];
            if (drop > 0 && !step_stream.keep(r, drop) && !is_space(ch))
              packed.ids[r] = 1 + static_cast<int>(char_class(ch));
          }
        }
        logits.resize(static_cast<Index>(packed.ids.size()), kSegmenterClasses);
        model.net().forward(packed.ids, cache, logits);
        loss_sum += segmenter_loss(logits, labels, counted, dlogits);
        ++batches;
        model.net().zero_grad();
        model.net().backward(cache, dlogits);
        const double warm = std::min(1.0, static_cast<double>(step) / static_cast<double>(std::max<long long>(1, o.warmup)));
        optimizer.set_lr(o.lr * warm * std::pow(o.lr_decay, epoch - 1));
        optimizer.step(store);
      }
      TokenizerEpoch record;
      record.epoch = epoch;
      record.loss = loss_sum / static_cast<double>(std::max<long long>(1, batches));
      record.dev = evaluate_conll18(dev_doc, model.tokenize(dev_doc.text, "dev text"));
      record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double score = selection_score(record.dev);
      record.best = score > best_score;
      if (record.best) {
        best_score = score;
        since_best = 0;
        std::copy(store.values().data(), store.values().data() + store.size(), best_values.begin());
      } else {
        ++since_best;
      }
      if (log)
        *log << "epoch " << epoch << ": loss " << record.loss << ", dev tokens " << 100 * record.dev.tokens.f1()
             << " sentences " << 100 * record.dev.sentences.f1() << " words " << 100 * record.dev.words.f1() << ", "
             << record.seconds << " s" << (record.best ? " (best)" : "") << std::endl;
      if (on_epoch) on_epoch(record);
      if (since_best >= o.patience) break;
    }
    std::copy(best_values.begin(), best_values.end(), store.values().data());
    return model;
  }
};

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_TOKENIZER_TRAINING_HPP

// synattn — the documents of a corpus: the runs of sentences that CoNLL-U's
// "# newdoc" comments begin, a training subset drawn as whole documents, and
// documents cut into chunks that fit one packed sequence
// (bias/packed_buckets.hpp, data/packed_batch.hpp).
//
//   const auto docs = corpus_documents(sentences);          // in file order
//   const auto subset = select_document_subset(docs, 2000); // whole documents, 2000 sentences
//   const auto chunks = document_chunks(subset, sentence_lengths(sentences), 4096);
//
// Sentences before a corpus's first "# newdoc" form a document of their own,
// so a corpus without any is one document.
#ifndef SYNATTN_DATA_DOCUMENTS_HPP
#define SYNATTN_DATA_DOCUMENTS_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../util/random.hpp"
#include "batching.hpp"
#include "tagging_corpus.hpp"

namespace synattn {

// Stream of the document subset's shuffle under the data seed (batching.hpp's
// sites are 1..3).
constexpr std::uint64_t kDocumentSubsetSite = 4;

struct Document {
  std::string id;                     // the newdoc comment's id (empty without one)
  std::vector<std::size_t> sentences;  // indices into the corpus, in file order
};

// The corpus's documents in file order; every sentence is in exactly one.
inline std::vector<Document> corpus_documents(const std::vector<TaggedSentence>& sentences) {
  std::vector<Document> docs;
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    if (docs.empty() || sentences[i].new_document) docs.push_back(Document{sentences[i].document_id, {}});
    docs.back().sentences.push_back(i);
  }
  return docs;
}

// Whole documents, in an order shuffled with RandomStream(data_seed)
// .derive(kDocumentSubsetSite), until they hold `n` sentences: the last one
// is cut after the sentence that reaches n, so the subset holds
// min(n, all sentences). Why whole documents: a packed sequence's
// cross-sentence context is its document's, which a subset of random
// sentences (select_training_subset) would not keep.
inline std::vector<Document> select_document_subset(const std::vector<Document>& documents, std::size_t n,
                                                    std::uint64_t data_seed = kDefaultDataSeed) {
  const std::vector<std::size_t> order =
      shuffled_indices(documents.size(), RandomStream(data_seed).derive(kDocumentSubsetSite));
  std::vector<Document> out;
  std::size_t taken = 0;
  for (std::size_t k = 0; k < order.size() && taken < n; ++k) {
    Document d = documents[order[k]];
    if (d.sentences.size() > n - taken) d.sentences.resize(n - taken);
    taken += d.sentences.size();
    if (!d.sentences.empty()) out.push_back(std::move(d));
  }
  return out;
}

// Every sentence index of `documents`, document after document.
inline std::vector<std::size_t> document_sentences(const std::vector<Document>& documents) {
  std::vector<std::size_t> out;
  for (const Document& d : documents) out.insert(out.end(), d.sentences.begin(), d.sentences.end());
  return out;
}

// Each document cut into consecutive runs of its sentences holding at most
// `max_tokens` words (lengths[i]: sentence i's words), in order. A sentence
// longer than max_tokens is a chunk of its own (a sentence is never split:
// its tree would be).
inline std::vector<std::vector<std::size_t>> document_chunks(const std::vector<Document>& documents,
                                                             const std::vector<int>& lengths, int max_tokens) {
  if (max_tokens < 1) throw Error("document_chunks: max_tokens must be >= 1, got " + std::to_string(max_tokens));
  std::vector<std::vector<std::size_t>> chunks;
  for (std::size_t d = 0; d < documents.size(); ++d) {
    long long words = 0;
    bool open = false;
    for (std::size_t i : documents[d].sentences) {
      if (i >= lengths.size())
        throw Error("document_chunks: document " + std::to_string(d) + " ('" + documents[d].id + "') has sentence " +
                    std::to_string(i) + ", expected < " + std::to_string(lengths.size()) + " (the lengths given)");
      const int len = lengths[i];
      if (!open || words + len > max_tokens) {
        chunks.emplace_back();
        words = 0;
        open = true;
      }
      chunks.back().push_back(i);
      words += len;
    }
  }
  return chunks;
}

}  // namespace synattn

#endif  // SYNATTN_DATA_DOCUMENTS_HPP

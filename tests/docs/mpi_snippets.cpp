// The MPI program of docs/distributed.md, verbatim between the snippet
// markers (tests/docs/check_snippets.cmake checks that), with the names it
// leaves open defined first: a tiny tagger, 24 sentences of the bundled EWT
// sample, 3 steps. Built only when synattn::mpi exists, and run by the test
// docs_mpi_snippet under mpirun -np 2 (tests/CMakeLists.txt).
#include <synattn/synattn.hpp>
#include <synattn/mpi/communicator.hpp>
#include <synattn/mpi/data_parallel.hpp>
#include <synattn/train/checkpoint.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace synattn;
using namespace synattn::nn;

namespace {

const std::vector<TaggedSentence> sentences = [] {
  std::vector<TaggedSentence> all =
      load_tagging_corpus(std::string(SYNATTN_SOURCE_DIR) + "/examples/data/en_ewt-dev-sample.conllu");
  all.resize(24);
  return all;
}();
const Vocabulary vocab = Vocabulary::build(sentences, nullptr);
const LabelSet labels = LabelSet::build(sentences);
const Bucketing bucketing = Bucketing::linear(10);
const EncodedCorpus corpus(sentences, vocab, labels, &bucketing);
const TaggerOptions options = [] {
  TaggerOptions o;
  o.vocab_size = vocab.size();
  o.num_classes = labels.size();
  o.d_model = 16;
  o.heads = 2;
  o.d_ff = 32;
  o.bias.bucketing = bucketing;
  return o;
}();
const long steps = 3;
const std::uint64_t seed = 1;
const WordDropout word_dropout = WordDropout::none();
const std::string path = "docs_mpi_snippet.safetensors";
// Step k's global batch: 8 sentences, the same on every rank.
std::vector<std::size_t> global_batch(long step) {
  std::vector<std::size_t> b;
  for (std::size_t i = 0; i < 8; ++i) b.push_back((static_cast<std::size_t>(step) * 8 + i) % corpus.size());
  return b;
}

}  // namespace

// snippet: docs/distributed.md
#include <synattn/mpi/communicator.hpp>   // link synattn::mpi
#include <synattn/mpi/data_parallel.hpp>

int main(int argc, char** argv) {
  synattn::mpi::Environment env(argc, argv);            // MPI_Init_thread (FUNNELED) ... MPI_Finalize
  return synattn::mpi::run_or_abort([&] {               // an exception: "rank r: message", MPI_Abort
    const synattn::mpi::Communicator comm;              // MPI_COMM_WORLD, MPI errors as exceptions
    SyntaxTransformerTagger<float> model(options);
    Adam<float> adam(AdamOptions{}, syntax_bias_groups(10.0));
    synattn::mpi::Fingerprint f;
    f.add("train_sentences", corpus.size()).add_parameters(model.parameter_infos());
    synattn::mpi::verify_agreement(comm, f.text());     // refuse mismatched ranks
    synattn::mpi::DataParallel<float> dp(comm, model.parameter_infos());  // overlap on, 256 KiB buckets
    dp.broadcast_parameters(model.parameters());        // rank 0's weights, then a hash check
    TaggerCache<float> cache;
    TokenBatch batch;
    for (long step = 0; step < steps; ++step) {
      const std::vector<std::size_t> global = global_batch(step);  // the same on every rank
      const auto mine = synattn::mpi::shard_of(global, comm.rank(), comm.size());
      if (mine.empty())
        clear_token_batch(batch);                       // fewer sentences than ranks: only join the reduction
      else
        make_token_batch(corpus, mine, word_dropout, batch);
      const Eigen::Map<const IdVector> ids(batch.ids.data(), batch.ids.size());
      const Eigen::Map<const IdVector> y(batch.labels.data(), batch.labels.size());
      const long long tokens = dp.global_count(static_cast<long long>(batch.tokens));  // the normaliser
      const RandomStream dropout_from_shard_start =     // masks keyed by global sentence
          RandomStream(seed).derive(step).sequences_from(synattn::mpi::shard(global.size(), comm.rank(), comm.size()).first);
      synattn::mpi::data_parallel_gradient(model, dp, ids, batch.lengths, batch.buckets, y, cache,
                                           &dropout_from_shard_start, tokens);  // forward, backward + reduction
      adam.step(model.parameter_store());               // identical on every rank
    }
    if (comm.is_root()) save_checkpoint<float>(path, model.parameter_store(), &adam, steps);
    return 0;
  });
}
// end snippet

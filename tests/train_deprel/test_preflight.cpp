// train_deprel's checks before training: output paths refused without
// writing the final files, empty corpora and oversized --train-size named,
// and the corpus checksum the ranks compare under mpirun (content, not counts).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../examples/train_deprel/preflight.hpp"
#include "support/temp_dir.hpp"

using namespace train_deprel;
using Catch::Contains;

namespace {
std::vector<synattn::TaggedSentence> corpus(const std::string& text) {
  std::istringstream in(text);
  return synattn::read_tagging_corpus(in, "test.conllu");
}
const char* kTwo =
    "# sent_id = a\n1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_\n\n"
    "# sent_id = b\n1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_\n\n";
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
bool empty_folder(const std::filesystem::path& p) { return std::filesystem::is_empty(p); }
}  // namespace

TEST_CASE("corpus_checksum changes with any form, head or relation, not with ids or case", "[preflight]") {
  const std::string base = corpus_checksum(corpus(kTwo)).hex();
  CHECK(base.size() == 16);
  CHECK(corpus_checksum(corpus(kTwo)).hex() == base);  // deterministic
  CHECK(corpus_checksum(corpus(replaced(kTwo, "\tcat\tcat", "\tdog\tcat"))).hex() != base);   // a form
  CHECK(corpus_checksum(corpus(replaced(kTwo, "\tdet\t", "\tnsubj\t"))).hex() != base);        // a relation
  // A head alone (same forms, same relations): word 2 hangs from word 1, not word 3.
  const std::string three = "1\ta\ta\tDET\t_\t_\t3\tdet\t_\t_\n2\tbig\tbig\tADJ\t_\t_\t3\tamod\t_\t_\n"
                            "3\tdog\tdog\tNOUN\t_\t_\t0\troot\t_\t_\n\n";
  CHECK(corpus_checksum(corpus(replaced(three, "\t3\tamod", "\t1\tamod"))).hex() !=
        corpus_checksum(corpus(three)).hex());
  CHECK(corpus_checksum(corpus(replaced(kTwo, "sent_id = a", "sent_id = z"))).hex() == base);  // not trained on
  CHECK(corpus_checksum(corpus(replaced(kTwo, "\tThe\t", "\tTHE\t"))).hex() == base);          // lower-cased forms
  // Same sizes, sentences in another order: another plan.
  const std::string swapped = std::string(kTwo).substr(std::string(kTwo).find("# sent_id = b")) +
                              std::string(kTwo).substr(0, std::string(kTwo).find("# sent_id = b"));
  CHECK(corpus_checksum(corpus(swapped)).hex() != base);
}

TEST_CASE("check_corpora names an empty file and a --train-size the file cannot fill", "[preflight]") {
  Config c;
  c.train_path = "t.conllu";
  c.dev_path = "d.conllu";
  c.train_sizes = {2};
  const auto two = corpus(kTwo);
  CHECK_NOTHROW(check_corpora(c, two, two));
  CHECK_THROWS_WITH(check_corpora(c, {}, two), "t.conllu: the training file holds no sentences");
  CHECK_THROWS_WITH(check_corpora(c, two, {}), "d.conllu: the dev file holds no sentences");
  c.train_sizes = {1, 3};
  CHECK_THROWS_AS(check_corpora(c, two, two), CliError);
  CHECK_THROWS_WITH(check_corpora(c, two, two), "--train-size 3: t.conllu holds only 2 sentences");
}

TEST_CASE("check_output_path refuses unwritable places and writes nothing at the path", "[preflight]") {
  synattn_test::TempDir dir("synattn_preflight");
  const std::string missing = dir.file("no_such_folder");
  CHECK_THROWS_WITH(check_output_path("--json", missing + "/r.jsonl", OutputKind::AppendedFile),
                    "--json " + missing + "/r.jsonl: folder " + missing + " does not exist");
  CHECK_THROWS_WITH(check_output_path("--save-checkpoint", dir.path().string(), OutputKind::ReplacedFile),
                    Contains("is a folder, expected a file name"));
  // New files: accepted, and neither they nor a scratch file are left behind.
  CHECK_NOTHROW(check_output_path("--json", dir.file("r.jsonl"), OutputKind::AppendedFile));
  CHECK_NOTHROW(check_output_path("--save-checkpoint", dir.file("m.safetensors"), OutputKind::ReplacedFile));
  CHECK_NOTHROW(check_output_path("--out", dir.file("figures/deeper"), OutputKind::Folder));
  CHECK(empty_folder(dir.path()));
  // An existing --json file is appended to later: it is kept as it is.
  { std::ofstream(dir.file("old.jsonl")) << "{\"run\": 1}\n"; }
  CHECK_NOTHROW(check_output_path("--json", dir.file("old.jsonl"), OutputKind::AppendedFile));
  std::ifstream in(dir.file("old.jsonl"));
  std::stringstream kept;
  kept << in.rdbuf();
  CHECK(kept.str() == "{\"run\": 1}\n");
  // --out below a file, or a file itself.
  CHECK_THROWS_WITH(check_output_path("--out", dir.file("old.jsonl") + "/figures", OutputKind::Folder),
                    "--out " + dir.file("old.jsonl") + "/figures: " + dir.file("old.jsonl") + " is not a folder");
  CHECK_THROWS_WITH(check_output_path("--out", dir.file("old.jsonl"), OutputKind::Folder),
                    Contains("is not a folder"));
  // The whole command line: --report checks only --out.
  Config c;
  c.json_path = missing + "/r.jsonl";
  CHECK_THROWS_AS(check_output_paths(c), CliError);
  c.report_path = "runs.jsonl";
  CHECK_NOTHROW(check_output_paths(c));
}

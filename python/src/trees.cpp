// synattn's Python binding — trees, bucketings, bucket blocks (padded
// batches, packed documents, subword tokens) and the C++ checkpoint format.
// Everything here is computed by the library's own functions; the binding
// only converts lists and arrays.
#include <synattn/bias/bucket_batch.hpp>
#include <synattn/bias/bucketing.hpp>
#include <synattn/bias/packed_buckets.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/io/safetensors.hpp>
#include <synattn/train/checkpoint.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/tree/dependency_tree.hpp>
#include <synattn/tree/distance.hpp>
#include <synattn/tree/subword.hpp>

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"

namespace synattn_py {

using synattn::Bucketing;
using synattn::BucketKind;
using synattn::DependencyTree;
using synattn::Index;

namespace {

py::array_t<std::int8_t> to_array(const synattn::BucketBlock& b) {
  py::array_t<std::int8_t> out({static_cast<py::ssize_t>(b.rows()), static_cast<py::ssize_t>(b.cols())});
  if (b.size() > 0) std::memcpy(out.mutable_data(), b.data(), static_cast<std::size_t>(b.size()));
  return out;
}

// (lengths, buckets (batch * n, n)) from a list of trees.
py::tuple bucket_batch(const std::vector<DependencyTree>& trees, const Bucketing& bucketing, int n_max) {
  synattn::BucketBatch b;
  {
    py::gil_scoped_release free;
    b = synattn::make_bucket_batch(trees, bucketing, n_max);
  }
  return py::make_tuple(b.lengths, to_array(b.buckets), b.n_max);
}

std::vector<int> token_map(const char* fn, const py::handle& obj) {
  try {
    return obj.cast<std::vector<int>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(fn) + ": a token-to-word map must be a sequence of ints (-1: special token)");
  }
}

// Subword-level buckets: token distances (tree/subword.hpp: a piece inherits
// its word's distances, 0 within a word, -2 for special tokens) in int16,
// then bucketed; (lengths in tokens, (batch * n, n) buckets).
py::tuple subword_bucket_batch(const std::vector<DependencyTree>& trees, const py::list& maps_obj,
                               const Bucketing& bucketing, int n_max) {
  const char* fn = "subword_bucket_batch";
  std::vector<std::vector<int>> maps;
  for (const py::handle m : maps_obj) maps.push_back(token_map(fn, m));
  if (n_max < 0)
    for (const auto& m : maps) n_max = std::max(n_max, static_cast<int>(m.size()));
  n_max = std::max(n_max, 0);
  const Index rows = static_cast<Index>(trees.size()) * n_max;
  synattn::BucketBlock buckets(rows, n_max);
  std::vector<int> lengths;
  {
    py::gil_scoped_release free;
    const long long cross = bucketing.cross_distance();
    if (bucketing.kind() == BucketKind::Directed) {
      synattn::RowMajorMatrix<std::int16_t> up(rows, n_max), down(rows, n_max);
      lengths = synattn::batch_token_directed_distances<std::int16_t>(trees, maps, up, down, cross);
      synattn::bucketize_directed<std::int16_t, std::int8_t>(bucketing, up, down, buckets);
    } else {
      synattn::RowMajorMatrix<std::int16_t> d(rows, n_max);
      lengths = synattn::batch_token_distances<std::int16_t>(trees, maps, d, cross);
      synattn::bucketize<std::int16_t, std::int8_t>(bucketing, d, buckets);
    }
  }
  return py::make_tuple(lengths, to_array(buckets), n_max);
}

std::vector<synattn::CharSpan> spans_of(const char* fn, const char* what, const py::handle& obj) {
  std::vector<synattn::CharSpan> out;
  try {
    for (const auto& p : obj.cast<std::vector<std::pair<int, int>>>()) out.push_back({p.first, p.second});
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(fn) + ": " + what + " must be a sequence of (begin, end) pairs of ints");
  }
  return out;
}

// The C++ checkpoint writer and reader over (name -> array) dictionaries, in
// the order `names` gives (the layer's). Python's own writer
// (synattn/safetensors.py) produces the same bytes; these are for the
// round-trip tests and for users who prefer the library's checks.
template <class Scalar>
void save_weights(const std::string& path, const std::vector<std::string>& names, const py::list& arrays,
                  const std::map<std::string, std::string>& extra) {
  const char* fn = "save_weights";
  if (names.size() != arrays.size())
    throw py::value_error(std::string(fn) + ": " + std::to_string(names.size()) + " names but " +
                          std::to_string(arrays.size()) + " arrays");
  std::vector<synattn::ParameterInfo> infos;
  std::vector<Scalar> flat;
  for (std::size_t i = 0; i < names.size(); ++i) {
    py::array_t<Scalar> a = require_array<Scalar>(fn, names[i].c_str(), arrays[i]);
    if (a.ndim() > 2)
      throw py::value_error(std::string(fn) + ": '" + names[i] + "' has shape " + shape_of(a) +
                            "; parameters have at most 2 dimensions");
    synattn::ParameterInfo p;
    p.name = names[i];
    p.offset = static_cast<Index>(flat.size());
    p.rows = a.ndim() == 2 ? a.shape(0) : 1;
    p.cols = a.ndim() == 2 ? a.shape(1) : (a.ndim() == 1 ? a.shape(0) : 1);
    flat.insert(flat.end(), a.data(), a.data() + a.size());
    infos.push_back(p);
  }
  const Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>> values(flat.data(), static_cast<Index>(flat.size()));
  synattn::save_checkpoint<Scalar>(path, infos, values, nullptr, 0, extra);
}

// Reads a checkpoint of our format into arrays shaped like `shapes` (name ->
// shape): every check of load_checkpoint (names, shapes, dtype, finite).
template <class Scalar>
py::dict load_weights(const std::string& path, const std::vector<std::string>& names,
                      const std::vector<std::vector<py::ssize_t>>& shapes) {
  if (names.size() != shapes.size()) throw py::value_error("load_weights: names and shapes differ in length");
  std::vector<synattn::ParameterInfo> infos;
  Index total = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    synattn::ParameterInfo p;
    p.name = names[i];
    p.offset = total;
    const auto& s = shapes[i];
    if (s.size() > 2) throw py::value_error("load_weights: '" + names[i] + "' has more than 2 dimensions");
    p.rows = s.size() == 2 ? s[0] : 1;
    p.cols = s.size() == 2 ? s[1] : (s.size() == 1 ? s[0] : 1);
    total += p.rows * p.cols;
    infos.push_back(p);
  }
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> values(total);
  const synattn::CheckpointInfo info = synattn::load_checkpoint<Scalar>(path, infos, values, nullptr);
  py::dict out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    py::array_t<Scalar> a(shapes[i]);
    std::memcpy(a.mutable_data(), values.data() + infos[i].offset, sizeof(Scalar) * infos[i].size());
    out[py::str(names[i])] = a;
  }
  (void)info;
  return out;
}

}  // namespace

void register_trees(py::module_& m) {
  py::enum_<BucketKind>(m, "BucketKind")
      .value("linear", BucketKind::Linear)
      .value("log", BucketKind::Log)
      .value("directed", BucketKind::Directed);

  py::class_<Bucketing>(m, "Bucketing", "How tree distances map to bias-table buckets (docs/math.md section 3)")
      .def_static("linear", &Bucketing::linear, py::arg("max_distance") = 10, py::arg("special_bucket") = false)
      .def_static("log", &Bucketing::log, py::arg("num_buckets"), py::arg("max_distance"), py::arg("exact") = -1,
                  py::arg("special_bucket") = false)
      .def_static("directed", &Bucketing::directed, py::arg("max_distance") = 10, py::arg("special_bucket") = false)
      .def_property_readonly("kind", &Bucketing::kind)
      .def_property_readonly("max_distance", &Bucketing::max_distance)
      .def_property_readonly("exact", &Bucketing::exact)
      .def_property_readonly("special_bucket", &Bucketing::special_bucket)
      .def_property_readonly("num_buckets", &Bucketing::num_buckets)
      .def_property_readonly("distance_buckets", &Bucketing::distance_buckets)
      .def_property_readonly("cross_distance", &Bucketing::cross_distance)
      .def("bucket", py::overload_cast<int>(&Bucketing::bucket, py::const_), py::arg("distance"))
      .def("bucket", py::overload_cast<int, int>(&Bucketing::bucket, py::const_), py::arg("up"), py::arg("down"))
      .def("__repr__", [](const Bucketing& b) { return "Bucketing." + b.describe(); })
      .def("__eq__",
           [](const Bucketing& a, const Bucketing& b) {
             return a.kind() == b.kind() && a.max_distance() == b.max_distance() &&
                    a.distance_buckets() == b.distance_buckets() && a.exact() == b.exact() &&
                    a.special_bucket() == b.special_bucket();
           })
      // Pickled as its factory's arguments (torch.save of a whole module pickles its options).
      .def(py::pickle(
          [](const Bucketing& b) {
            return py::make_tuple(static_cast<int>(b.kind()), b.max_distance(), b.distance_buckets(), b.exact(),
                                  b.special_bucket());
          },
          [](const py::tuple& t) {
            if (t.size() != 5) throw py::value_error("Bucketing: bad pickled state");
            const auto kind = static_cast<BucketKind>(t[0].cast<int>());
            const int m = t[1].cast<int>(), buckets = t[2].cast<int>(), exact = t[3].cast<int>();
            const bool special = t[4].cast<bool>();
            if (kind == BucketKind::Linear) return Bucketing::linear(m, special);
            if (kind == BucketKind::Directed) return Bucketing::directed(m, special);
            return Bucketing::log(buckets, m, exact, special);
          }));

  py::class_<DependencyTree>(m, "Tree", "A dependency tree (or packed forest): heads 0-based, the root's head -1")
      .def(py::init([](const std::vector<int>& heads, const std::string& convention, const std::string& name,
                       bool forest) {
             synattn::HeadConvention c;
             if (convention == "zero_based")
               c = synattn::HeadConvention::ZeroBasedRootMinusOne;
             else if (convention == "conllu")
               c = synattn::HeadConvention::OneBasedRootZero;
             else if (convention == "root_is_self")
               c = synattn::HeadConvention::RootIsSelf;
             else
               throw py::value_error("Tree: convention must be 'zero_based', 'conllu' or 'root_is_self', got '" +
                                     convention + "'");
             return DependencyTree::from_heads(heads, c,
                                               forest ? synattn::Structure::Forest : synattn::Structure::Tree, name);
           }),
           py::arg("heads"), py::arg("convention") = "zero_based", py::arg("name") = "", py::arg("forest") = false)
      .def_static("pack", &DependencyTree::pack, py::arg("trees"), py::arg("name") = "")
      .def_property_readonly("heads", &DependencyTree::heads)
      .def_property_readonly("roots", &DependencyTree::roots)
      .def_property_readonly("name", &DependencyTree::sentence)
      .def("__len__", &DependencyTree::size)
      .def(
          "distances",
          [](const DependencyTree& t) {
            py::array_t<std::int16_t> out({t.size(), t.size()});
            Eigen::Map<synattn::RowMajorMatrix<std::int16_t>> d(out.mutable_data(), t.size(), t.size());
            synattn::pairwise_distances<std::int16_t>(t, d);
            return out;
          },
          "Tree distances of every word pair (int16; docs/math.md section 2)")
      .def(
          "directed_distances",
          [](const DependencyTree& t) {
            py::array_t<std::int16_t> up({t.size(), t.size()}), down({t.size(), t.size()});
            Eigen::Map<synattn::RowMajorMatrix<std::int16_t>> u(up.mutable_data(), t.size(), t.size());
            Eigen::Map<synattn::RowMajorMatrix<std::int16_t>> w(down.mutable_data(), t.size(), t.size());
            synattn::directed_distances<std::int16_t>(t, u, w);
            return py::make_tuple(up, down);
          })
      .def("__repr__", [](const DependencyTree& t) {
        return "synattn.Tree(" + std::to_string(t.size()) + " words" + (t.sentence().empty() ? "" : ", " + t.sentence()) +
               ")";
      });

  py::class_<synattn::ConlluSentence>(m, "ConlluSentence")
      .def_readonly("sent_id", &synattn::ConlluSentence::sent_id)
      .def_readonly("text", &synattn::ConlluSentence::text)
      .def_readonly("new_document", &synattn::ConlluSentence::new_document)
      .def_readonly("document_id", &synattn::ConlluSentence::document_id)
      .def_readonly("line", &synattn::ConlluSentence::line)
      .def_property_readonly("forms",
                             [](const synattn::ConlluSentence& s) {
                               std::vector<std::string> v;
                               for (const auto& w : s.words) v.push_back(w.form);
                               return v;
                             })
      .def_property_readonly("upos",
                             [](const synattn::ConlluSentence& s) {
                               std::vector<std::string> v;
                               for (const auto& w : s.words) v.push_back(w.upos);
                               return v;
                             })
      .def_property_readonly("deprels",
                             [](const synattn::ConlluSentence& s) {
                               std::vector<std::string> v;
                               for (const auto& w : s.words) v.push_back(w.deprel);
                               return v;
                             })
      .def_property_readonly("heads", &synattn::ConlluSentence::heads, "0-based, the root's head -1")
      .def("tree", &synattn::ConlluSentence::tree)
      .def("__len__", &synattn::ConlluSentence::size)
      .def("__repr__", [](const synattn::ConlluSentence& s) {
        return "synattn.ConlluSentence(" + s.label() + ", " + std::to_string(s.size()) + " words)";
      });

  m.def(
      "read_conllu",
      [](const std::string& path) {
        py::gil_scoped_release free;
        return synattn::read_conllu(path);
      },
      py::arg("path"), "Every sentence of a CoNLL-U file (strict: a malformed line raises FormatError naming it)");

  m.def("_bucket_batch", &bucket_batch, py::arg("trees"), py::arg("bucketing"), py::arg("n_max") = -1);
  m.def("_subword_bucket_batch", &subword_bucket_batch, py::arg("trees"), py::arg("token_to_word"),
        py::arg("bucketing"), py::arg("n_max") = -1);
  m.def(
      "token_to_word_from_spans",
      [](const py::handle& words, const py::handle& tokens) {
        const char* fn = "token_to_word_from_spans";
        return synattn::token_to_word_from_spans(spans_of(fn, "word spans", words), spans_of(fn, "token spans", tokens));
      },
      py::arg("word_spans"), py::arg("token_spans"),
      "Each token's word from character spans (-1: special, e.g. an empty span or whitespace); tree/subword.hpp");

  py::enum_<synattn::RootLinks>(m, "RootLinks")
      .value("none", synattn::RootLinks::none)
      .value("all_roots", synattn::RootLinks::all_roots);
  py::class_<synattn::PackedBuckets>(m, "PackedBuckets",
                                     "Packed documents' buckets: each sentence's block and a sentence window")
      .def_property_readonly("window", &synattn::PackedBuckets::window)
      .def_property_readonly("cross_bucket", &synattn::PackedBuckets::cross_bucket)
      .def_property_readonly("max_bucket", &synattn::PackedBuckets::max_bucket)
      .def_property_readonly("sequences", &synattn::PackedBuckets::sequences)
      .def_property_readonly("lengths", &synattn::PackedBuckets::lengths)
      .def_property_readonly("block_bytes", &synattn::PackedBuckets::block_bytes)
      .def("dense", [](const synattn::PackedBuckets& p, Index n) { return to_array(p.dense(n)); }, py::arg("n"),
           "The same pairs as a dense (sequences * n, n) block (for tests and the dense path)");
  m.def(
      "pack_documents",
      [](const std::vector<std::vector<DependencyTree>>& documents, const Bucketing& bucketing, int window,
         int max_tree_distance, bool root_links) {
        synattn::PackingOptions o;
        o.window = window;
        o.max_tree_distance = max_tree_distance;
        o.root_links = root_links ? synattn::RootLinks::all_roots : synattn::RootLinks::none;
        py::gil_scoped_release free;
        return synattn::make_packed_buckets(documents, bucketing, o);
      },
      py::arg("documents"), py::arg("bucketing"), py::arg("window") = 0, py::arg("max_tree_distance") = -1,
      py::arg("root_links") = false,
      "Packs documents (each a list of sentence trees) into one sequence each (bias/packed_buckets.hpp)");

  m.def("_save_weights_f32", &save_weights<float>);
  m.def("_save_weights_f64", &save_weights<double>);
  m.def("_load_weights_f32", &load_weights<float>);
  m.def("_load_weights_f64", &load_weights<double>);
}

}  // namespace synattn_py

// ParameterStore binding: a store's parameters moved into outside storage
// (a model's flat buffer), adjacency checks, copies that never alias, and an
// attention layer bound to a buffer, alone and sharing its table and scale
// with another layer (gradients accumulate into the one shared slice);
// nn::BoundModel, a whole model's parts in one buffer with its copy and move
// rules.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/nn/linear.hpp>
#include <synattn/nn/parameter_binding.hpp>
#include <synattn/util/parameters.hpp>

#include <random>
#include <vector>
#include "support/attention_calls.hpp"

using namespace synattn;
using MatrixD = RowMajorMatrix<double>;
using VectorD = Eigen::VectorXd;

TEST_CASE("ParameterStore: unbound behaviour is unchanged", "[parameters]") {
  ParameterStore<double> s;
  const int a = s.add("a", 2, 3);
  const int b = s.add("b", 1, 2, false);
  CHECK(s.size() == 8);
  s.value(a).setConstant(1.5);
  s.value(b) << 7, 8;
  CHECK(s.values()(6) == 7);
  CHECK(!s.bound());
  CHECK(s.info(b).offset == 6);
  CHECK_THROWS_AS(s.add("a", 1, 1), Error);
}

TEST_CASE("ParameterStore: bind, views through the binding, copies own their storage", "[parameters]") {
  ParameterStore<double> s;
  const int a = s.add("a", 2, 2);
  const int b = s.add("b", 1, 3);
  s.value(a) << 1, 2, 3, 4;
  VectorD values = VectorD::Zero(20), grads = VectorD::Zero(20);
  // the caller copies values in, then binds (b before a: any placement)
  values.segment(10, 4) << 1, 2, 3, 4;
  s.bind({values.data() + 10, values.data() + 2}, {grads.data() + 10, grads.data() + 2});
  CHECK(s.bound());
  CHECK(s.value(a)(1, 0) == 3);
  s.value(b) << 5, 6, 7;
  CHECK(values(2) == 5);
  CHECK(values(4) == 7);
  s.gradient(a).setOnes();
  CHECK(grads.segment(10, 4).sum() == 4);
  s.set("b", (MatrixD(1, 3) << 9, 9, 9).finished());
  CHECK(values.segment(2, 3).sum() == 27);
  CHECK_THROWS_AS(s.values(), Error);
  CHECK_THROWS_AS(s.gradients(), Error);
  CHECK_THROWS_AS(s.add("c", 1, 1), Error);
  int visited = 0;
  s.visit([&](const ParameterInfo& info, auto v, auto g) {
    CHECK(v.rows() == info.rows);
    CHECK(g.size() == info.size());
    ++visited;
  });
  CHECK(visited == 2);

  // a copy is unbound, holds the current values, and does not alias
  ParameterStore<double> copy = s;
  CHECK(!copy.bound());
  CHECK(copy.value(b)(0, 2) == 9);
  CHECK(copy.gradient(a)(1, 1) == 1);
  copy.value(b)(0, 0) = -1;
  CHECK(values(2) == 9);
  s.value(b)(0, 1) = -2;
  CHECK(copy.value(b)(0, 1) == 9);
  // copy assignment onto a bound store writes through its binding and keeps
  // it (it used to unbind in silence)
  ParameterStore<double> other = s;
  VectorD other_values = VectorD::Zero(20), other_grads = VectorD::Zero(20);
  other.bind({other_values.data(), other_values.data() + 16}, {other_grads.data(), other_grads.data() + 16});
  other = copy;
  CHECK(other.bound());
  CHECK(other.value(b)(0, 0) == -1);
  CHECK(other_values(16) == -1);

  // zero_grad zeroes the bound slices only
  grads.setConstant(3);
  s.zero_grad();
  CHECK(grads.segment(10, 4).isZero());
  CHECK(grads.segment(2, 3).isZero());
  CHECK(grads(0) == 3);

  // unbind: back to own buffers with the current values
  s.unbind();
  CHECK(!s.bound());
  CHECK(s.values()(0) == 1);
  CHECK(s.values()(4) == 9);
  s.value(a)(0, 0) = 100;
  CHECK(values(10) == 1);
}

TEST_CASE("ParameterStore: bind checks counts, null pointers and adjacency", "[parameters]") {
  ParameterStore<double> s;
  s.add("w1", 2, 2);
  s.add("w2", 1, 2);
  s.keep_adjacent(0, 1);
  VectorD v = VectorD::Zero(10), g = VectorD::Zero(10);
  CHECK_THROWS_AS(s.bind({v.data()}, {g.data()}), Error);
  CHECK_THROWS_AS(s.bind({v.data(), nullptr}, {g.data(), g.data() + 4}), Error);
  CHECK_THROWS_WITH(s.bind({v.data(), v.data() + 5}, {g.data(), g.data() + 4}),
                    Catch::Contains("'w1' and 'w2' must be adjacent"));
  CHECK_THROWS_AS(s.bind({v.data(), v.data() + 4}, {g.data(), g.data() + 5}), Error);
  CHECK(!s.bound());
  s.bind({v.data(), v.data() + 4}, {g.data(), g.data() + 4});
  CHECK(s.bound());
}

namespace {

struct Inputs {
  MatrixD x, dout;
  std::vector<int> lengths{4, 3};
  RowMajorMatrix<std::int8_t> buckets;
};

Inputs make_inputs() {
  Inputs in;
  std::mt19937 gen(3);
  std::normal_distribution<double> dist;
  in.x.resize(8, 6);
  in.dout.resize(8, 6);
  for (Index i = 0; i < in.x.size(); ++i) in.x.data()[i] = dist(gen);
  for (Index i = 0; i < in.dout.size(); ++i) in.dout.data()[i] = dist(gen);
  in.buckets.resize(8, 4);
  for (Index r = 0; r < 8; ++r)
    for (Index c = 0; c < 4; ++c) {
      const bool padding = r % 4 >= in.lengths[std::size_t(r / 4)] || c >= in.lengths[std::size_t(r / 4)];
      in.buckets(r, c) = static_cast<std::int8_t>(padding ? -1 : (r + c) % 5);
    }
  return in;
}

// Binds every parameter of `layer` into (values, grads) from `offset` in
// order, except table/scale when `shared` points at their slice.
void bind_layer(SyntaxBiasedAttention<double>& layer, VectorD& values, VectorD& grads, Index offset,
                const Index* shared) {
  auto& store = layer.parameter_store();
  std::vector<double*> v, g;
  Index at = offset;
  for (int i = 0; i < store.count(); ++i) {
    const ParameterInfo& p = store.info(i);
    Index where = at;
    if (shared && p.name == "table") where = shared[0];
    if (shared && p.name == "scale") where = shared[1];
    if (where == at) at += p.size();
    values.segment(where, p.size()) = Eigen::Map<const VectorD>(store.value(i).data(), p.size());
    v.push_back(values.data() + where);
    g.push_back(grads.data() + where);
  }
  store.bind(v, g);
}

}  // namespace

TEST_CASE("SyntaxBiasedAttention bound to an outside buffer: same results, gradients land there", "[parameters][attention]") {
  AttentionOptions o(6, 2);
  o.bias.bucketing = Bucketing::linear(4);
  o.bias.init = TableInit::LinearDecay;
  const Inputs in = make_inputs();
  SyntaxBiasedAttention<double> plain(o);
  AttentionCache<double> c1, c2;
  const MatrixD y1 = synattn_test::forward_value(plain, {in.x, in.lengths, in.buckets}, c1);
  const MatrixD dx1 = synattn_test::backward_value(plain, c1, in.dout);

  SyntaxBiasedAttention<double> bound(o);
  VectorD values = VectorD::Zero(bound.parameter_count() + 3), grads = VectorD::Zero(values.size());
  bind_layer(bound, values, grads, 3, nullptr);
  const MatrixD y2 = synattn_test::forward_value(bound, {in.x, in.lengths, in.buckets}, c2);
  const MatrixD dx2 = synattn_test::backward_value(bound, c2, in.dout);
  CHECK(y1 == y2);
  CHECK(dx1 == dx2);
  CHECK(grads.segment(3, plain.parameter_count()) == plain.gradients());
  CHECK(bound.scale() == 1.0);
  CHECK(bound.table()(0, 2) == -2.0);
  CHECK_THROWS_AS(bound.parameters(), Error);
  bound.zero_grad();
  CHECK(grads.isZero());

  // a copy of a bound layer is standalone: same output, its own parameters
  SyntaxBiasedAttention<double> copy = bound;
  CHECK(!copy.parameter_store().bound());
  AttentionCache<double> c3;
  CHECK(synattn_test::forward_value(copy, {in.x, in.lengths, in.buckets}, c3) == y1);
  copy.Wq()(0, 0) += 1;
  CHECK(values(3) == plain.Wq()(0, 0));
}

TEST_CASE("Two attention layers sharing one table and scale: gradients add up in the shared slice",
          "[parameters][attention]") {
  AttentionOptions o(6, 2);
  o.bias.bucketing = Bucketing::linear(4);
  const Inputs in = make_inputs();
  AttentionOptions o2 = o;
  o2.seed = 77;
  SyntaxBiasedAttention<double> a(o), b(o2);
  a.table() << 0.5, -0.25, 0.1, 0.2, -0.3;
  b.table() = a.table();
  // separate layers, for the expected sums
  SyntaxBiasedAttention<double> a0 = a, b0 = b;
  AttentionCache<double> ca, cb;
  synattn_test::forward_value(a0, {in.x, in.lengths, in.buckets}, ca);
  synattn_test::backward_value(a0, ca, in.dout);
  synattn_test::forward_value(b0, {in.x, in.lengths, in.buckets}, cb);
  synattn_test::backward_value(b0, cb, in.dout);

  const Index shared[2] = {0, 5};  // table (5 buckets) at 0, scale at 5
  VectorD values = VectorD::Zero(6 + a.parameter_count() + b.parameter_count());
  VectorD grads = VectorD::Zero(values.size());
  bind_layer(a, values, grads, 6, shared);
  bind_layer(b, values, grads, 6 + a.parameter_count() - 6, shared);
  synattn_test::forward_value(a, {in.x, in.lengths, in.buckets}, ca);
  synattn_test::backward_value(a, ca, in.dout);
  synattn_test::forward_value(b, {in.x, in.lengths, in.buckets}, cb);
  synattn_test::backward_value(b, cb, in.dout);
  const MatrixD want_table = a0.gradient("table") + b0.gradient("table");
  for (Index i = 0; i < 5; ++i) CHECK(grads(i) == Approx(want_table(0, i)).epsilon(1e-14));
  CHECK(grads(5) == Approx(a0.gradient("scale")(0, 0) + b0.gradient("scale")(0, 0)).epsilon(1e-14));
  CHECK(a.gradient("Wq") == a0.gradient("Wq"));
  // one value: changing the shared table changes both layers' view
  a.table()(0, 1) = 3;
  CHECK(b.table()(0, 1) == 3);
}

namespace {

// A whole model of two linear layers, as the tagger and the parser hold theirs.
struct TwoLinears {
  static constexpr const char* kCopyName = "TwoLinears (copy)";
  explicit TwoLinears(int d) : first(d, 3, RandomStream(1)), second(3, 2, RandomStream(2)) {}
  template <class F>
  void visit_stores(F&& f) {
    f(std::string("first."), first.parameter_store(), std::string());
    f(std::string("second."), second.parameter_store(), std::string());
  }
  nn::Linear<double> first, second;
  ParameterStore<double> root;
};

// True when every part's parameters are views of m's root buffer.
bool parts_in_root(nn::BoundModel<TwoLinears>& m) {
  const double* begin = m.root.values().data();
  const double* end = begin + m.root.size();
  const double* w = m.first.weight().data();
  const double* v = m.second.bias().data();
  return w >= begin && w < end && v >= begin && v < end;
}

}  // namespace

TEST_CASE("nn::BoundModel binds the parts into one buffer; copies own theirs, moves keep working",
          "[parameters][binding]") {
  nn::BoundModel<TwoLinears> a(4);
  REQUIRE(a.root.size() == 4 * 3 + 3 + 3 * 2 + 2);
  CHECK(a.root.find("first.weight") == 0);
  CHECK(a.root.find("second.bias") == 3);
  CHECK(parts_in_root(a));
  CHECK(!a.moved_from());
  a.first.weight()(0, 0) = 5;  // through the part: lands in the root
  CHECK(a.root.value(0)(0, 0) == 5);

  nn::BoundModel<TwoLinears> copy(a);
  CHECK(parts_in_root(copy));
  CHECK((copy.root.values().array() == a.root.values().array()).all());
  copy.first.weight()(0, 0) = 6;
  CHECK(a.first.weight()(0, 0) == 5);  // never aliases the original

  nn::BoundModel<TwoLinears> moved(std::move(copy));
  CHECK(parts_in_root(moved));
  CHECK(moved.first.weight()(0, 0) == 6);
  CHECK(copy.moved_from());
  CHECK_THROWS_WITH(copy.require("TwoLinears::forward"), Catch::Contains("TwoLinears::forward: this model was moved"));
  const auto copy_of = [](const nn::BoundModel<TwoLinears>& m) { return nn::BoundModel<TwoLinears>(m); };
  CHECK_THROWS_WITH(copy_of(copy), Catch::Contains("TwoLinears (copy): this model was moved"));
  CHECK_NOTHROW(moved.require("TwoLinears::forward"));

  nn::BoundModel<TwoLinears> assigned(2);
  assigned = a;  // a copy of another shape: its own buffer again
  CHECK(parts_in_root(assigned));
  CHECK(assigned.first.weight()(0, 0) == 5);
  CHECK_THROWS_WITH(assigned = copy, Catch::Contains("TwoLinears (copy): this model was moved"));
  CHECK(assigned.first.weight()(0, 0) == 5);  // a refused copy changes nothing
  copy = std::move(assigned);  // a moved-from model takes a model again
  CHECK(!copy.moved_from());
  CHECK(assigned.moved_from());
  CHECK(parts_in_root(copy));
  auto& self = copy;
  copy = std::move(self);  // a self-move keeps the model
  CHECK(!copy.moved_from());
  CHECK(copy.first.weight()(0, 0) == 5);
  copy = a;  // a self-copy through another name is a copy of a
  CHECK(parts_in_root(copy));
}

// Issue 44 §5: assigning a new Linear to a sub-layer bound to its model's
// flat buffer detached it in silence: the layer read its own new buffer and
// the optimiser trained the model's, which the layer no longer read.
TEST_CASE("assigning a layer to a bound part writes into the model's buffer, or is refused: never a silent detach",
          "[parameters][binding]") {
  nn::BoundModel<TwoLinears> m(4);
  nn::Linear<double> same(4, 3, RandomStream(9));
  same.weight()(1, 2) = 42;
  m.first = same;  // copy: the values land in the root
  CHECK(parts_in_root(m));
  CHECK(m.root.value(m.root.id("first.weight"))(1, 2) == 42);
  m.first.weight()(0, 0) = 7;
  CHECK(m.root.value(m.root.id("first.weight"))(0, 0) == 7);
  m.first = nn::Linear<double>(4, 3, RandomStream(10));  // move: the same
  CHECK(parts_in_root(m));
  const VectorD before = m.root.values();
  CHECK_THROWS_WITH(m.first = nn::Linear<double>(5, 3, RandomStream(11)),
                    Catch::Contains("bound to a model's flat buffer") && Catch::Contains("detach"));
  CHECK(parts_in_root(m));
  CHECK((m.root.values().array() == before.array()).all());
}

// train_deprel's progress line: format, in-place updates on a terminal, plain lines otherwise.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "../../examples/train_deprel/progress.hpp"

using namespace train_deprel;

namespace {
ProgressState state() {
  ProgressState p;
  p.run = "shared N=500 seed 1";
  p.epoch = 3;
  p.epochs = 60;
  p.step = 7;
  p.steps = 16;
  p.loss = 1.23456;
  p.tokens_per_second = 12345.4;
  p.eta_seconds = 125;
  return p;
}
}  // namespace

TEST_CASE("durations and ETA", "[progress]") {
  CHECK(format_duration(12.4) == "12s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(3720) == "1h02m");
  CHECK(format_duration(NAN) == "?");
  CHECK(format_duration(-1) == "?");
  CHECK(eta_seconds(10.0, 2.0, 10.0) == Approx(40.0).epsilon(1e-12));
  CHECK(std::isnan(eta_seconds(10.0, 0.0, 10.0)));
}

TEST_CASE("the line shows epoch, step, loss, dev accuracy, tokens/s and ETA", "[progress]") {
  ProgressState p = state();
  CHECK(format_progress(p) == "shared N=500 seed 1: epoch 3/60 step 7/16 loss 1.2346 dev - 12345 tok/s ETA 2m05s");
  p.dev_accuracy = 70.625;
  CHECK(format_progress(p).find("dev 70.62% ") != std::string::npos);
}

TEST_CASE("a terminal gets in-place updates and one line per epoch", "[progress]") {
  std::ostringstream out;
  Progress pr(out, true);
  pr.update(state());
  pr.update(state());
  pr.end_epoch(state());
  const std::string s = out.str();
  CHECK(s.rfind('\r', 0) == 0);
  CHECK(std::count(s.begin(), s.end(), '\r') == 3);
  CHECK(std::count(s.begin(), s.end(), '\n') == 1);
  CHECK(s.find("\x1b[K") != std::string::npos);
}

TEST_CASE("a file or pipe gets plain lines, one per epoch", "[progress]") {
  std::ostringstream out;
  Progress pr(out, false);
  pr.update(state());
  pr.end_epoch(state());
  pr.update(state());
  pr.end_epoch(state());
  pr.note("done");
  const std::string s = out.str();
  CHECK(s.find('\r') == std::string::npos);
  CHECK(s.find('\x1b') == std::string::npos);
  CHECK(std::count(s.begin(), s.end(), '\n') == 3);
  CHECK(s.substr(s.size() - 5) == "done\n");
}

// The one-time SIMD notice (kernels/simd_notice.hpp) and the feature sets it
// compares (util/cpu_features.hpp).
//
// Built twice: natively (test_simd_notice: -march=native, so this CPU has
// nothing the build lacks) and, on x86-64, as test_simd_notice_baseline with
// -march=x86-64 (a consumer's default flags) and the portable kernels only
// (SYNATTN_PORTABLE_KERNELS), where nothing makes up for the flags and the
// layer must print the notice.
// The "[.process]" cases need a process of their own (the decision is taken
// once per process); tests/CMakeLists.txt runs each one alone.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/util/cpu_features.hpp>
#include <synattn/kernels/simd_notice.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

using synattn::CpuFeature;

namespace {

constexpr CpuFeature kSse4 = CpuFeature::sse4_1 | CpuFeature::sse4_2;
constexpr CpuFeature kAvx2Machine = kSse4 | CpuFeature::avx | CpuFeature::avx2 | CpuFeature::fma;

namespace k = synattn::kernels;
constexpr k::KernelSet kAvx2Set = k::kernel_set_for(synattn::KernelIsa::avx2);
constexpr k::KernelSet kPortableSet = k::kernel_set_for(synattn::KernelIsa::portable);
constexpr k::KernelSet kAvx512Set = k::kernel_set_for(synattn::KernelIsa::avx512);
constexpr k::KernelSet kNeonSet = k::kernel_set_for(synattn::KernelIsa::neon);

// The notice as the layer would print it on an AVX2 machine with the portable set.
std::string portable_notice(CpuFeature build) { return synattn::simd_notice_text(kAvx2Machine, build, kPortableSet); }

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, got);
  return out;
}

// Redirects file descriptor 2 (what std::fputs(stderr) ends up writing to)
// into a temporary file until finish().
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    REQUIRE(file_ != nullptr);
    std::fflush(stderr);
    saved_ = ::dup(2);
    REQUIRE(saved_ >= 0);
    REQUIRE(::dup2(::fileno(file_), 2) >= 0);
  }
  std::string finish() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    const std::string text = read_all(file_);
    std::fclose(file_);
    return text;
  }

 private:
  std::FILE* file_;
  int saved_ = -1;
};

// How many times `needle` occurs in `text`.
std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

const std::string kHead = "synattn: built for ";

}  // namespace

TEST_CASE("feature sets combine and name their members in a fixed order", "[simd_notice]") {
  CHECK(synattn::feature_names(CpuFeature::none).empty());
  CHECK(synattn::feature_names(CpuFeature::fma | CpuFeature::avx2) == "AVX2 FMA");
  CHECK(synattn::feature_names(kAvx2Machine | CpuFeature::avx512f) == "SSE4.1 SSE4.2 AVX AVX2 FMA AVX512F");
  CHECK(synattn::without(kAvx2Machine, kSse4 | CpuFeature::avx) == (CpuFeature::avx2 | CpuFeature::fma));
  CHECK(synattn::has(kAvx2Machine, CpuFeature::fma));
  CHECK_FALSE(synattn::has(kAvx2Machine, CpuFeature::avx512f));
  CHECK_FALSE(synattn::has(kAvx2Machine, CpuFeature::none));
}

TEST_CASE("the notice is one short line, printed only when no run-time kernel makes up for the flags",
          "[simd_notice]") {
  SECTION("portable kernels, default x86-64 flags, an AVX2 machine: the line and what to do") {
    const std::string text = portable_notice(CpuFeature::none);
    CHECK(text ==
          "synattn: built for the x86-64 baseline with no run-time kernels; this CPU also has SSE4.1 SSE4.2 AVX AVX2 "
          "FMA: build with synattn::native or -march=native (SYNATTN_SIMD_NOTICE=0 silences this)\n");
    CHECK(count(text, "\n") == 1);
    CHECK(text.size() <= 200);
  }
  SECTION("portable kernels, AVX (Sandy Bridge) flags: the features still unused") {
    CHECK_THAT(portable_notice(kSse4 | CpuFeature::avx),
               Catch::StartsWith(kHead + "SSE4.1 SSE4.2 AVX with no run-time kernels; this CPU also has AVX2 FMA: "));
  }
  SECTION("run-time kernels cover the hot paths: silent, whatever the flags leave unused") {
    CHECK(synattn::simd_notice_text(kAvx2Machine, CpuFeature::none, kAvx2Set).empty());
    CHECK(synattn::simd_notice_text(kAvx2Machine | CpuFeature::avx512f | CpuFeature::avx512bw, kSse4, kAvx512Set)
              .empty());
    CHECK(synattn::simd_notice_text(kAvx2Machine, CpuFeature::none, kNeonSet).empty());  // row kernels only
  }
  SECTION("nothing missing: no notice, even with the portable set") {
    CHECK(portable_notice(kAvx2Machine).empty());
    CHECK(synattn::simd_notice_text(kAvx2Machine, kAvx2Machine | CpuFeature::avx512f, kPortableSet).empty());
    CHECK(synattn::simd_notice_text(CpuFeature::none, CpuFeature::none, kPortableSet).empty());  // non-x86: nothing known
  }
}

TEST_CASE("the CPU supports at least what this program was compiled for", "[simd_notice]") {
  // This process runs, so its CPU executes the build's instructions: a wrong
  // CPUID reading (a feature the CPU lacks, or one missed) shows up here.
  const CpuFeature cpu = synattn::cpu_features(), build = synattn::build_cpu_features();
  CAPTURE(synattn::feature_names(cpu), synattn::feature_names(build));
  CHECK(synattn::without(build, cpu) == CpuFeature::none);
#if defined(__x86_64__) && defined(__AVX2__)
  CHECK(synattn::has(cpu, CpuFeature::avx2));
#endif
}

TEST_CASE("the notice state prints once, and is silenced by the switch or the environment", "[simd_notice]") {
  const std::string text = portable_notice(kSse4);
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  synattn::detail::SimdNoticeState state;
  SECTION("first decision prints, later ones do not") {
    CHECK(state.decide(out, text, nullptr));
    CHECK_FALSE(state.decide(out, text, nullptr));
    CHECK_FALSE(state.decide(out, text, "1"));
    CHECK(read_all(out) == text);
  }
  SECTION("set_enabled(false) before the first decision silences it for good") {
    state.set_enabled(false);
    CHECK_FALSE(state.decide(out, text, nullptr));
    state.set_enabled(true);  // too late: decided
    CHECK_FALSE(state.decide(out, text, nullptr));
    CHECK(read_all(out).empty());
  }
  SECTION("SYNATTN_SIMD_NOTICE=0 (or off/false) silences it; other values do not") {
    for (const char* value : {"0", "off", "OFF", "false"}) CHECK(synattn::simd_notice_env_silences(value));
    for (const char* value : {"1", "", "yes"}) CHECK_FALSE(synattn::simd_notice_env_silences(value));
    CHECK_FALSE(synattn::simd_notice_env_silences(nullptr));
    CHECK_FALSE(state.decide(out, text, "0"));
    CHECK(read_all(out).empty());
  }
  SECTION("an empty notice prints nothing and still decides") {
    CHECK_FALSE(state.decide(out, std::string(), nullptr));
    CHECK(state.decided());
    CHECK_FALSE(state.decide(out, text, nullptr));
    CHECK(read_all(out).empty());
  }
  std::fclose(out);
}

// ---------------------------------------------------------------------------
// The layer's hook, through the process-wide state: one case per process.
// ---------------------------------------------------------------------------

namespace {

// Constructs two layers (float and double) with stderr captured.
std::string construct_layers_capturing_stderr() {
  StderrCapture capture;
  {
    synattn::SyntaxBiasedAttention<float> a(synattn::AttentionOptions(16, 2));
    synattn::SyntaxBiasedAttention<double> b(synattn::AttentionOptions(16, 2));
    synattn::SyntaxBiasedAttention<float> c(synattn::AttentionOptions(8, 1));
  }
  return capture.finish();
}

// The notice this process should print: in the baseline build (default
// x86-64 flags, portable kernels) on any CPU with SSE4.1 or better it must
// not be empty, or the test below would pass without testing anything.
std::string expected_notice() {
  const std::string text = synattn::simd_notice_text(synattn::cpu_features(), synattn::build_cpu_features(),
                                                     k::kernel_set_for(k::detail::default_isa()));
#if defined(SYNATTN_TEST_BASELINE_BUILD)
  if (synattn::has(synattn::cpu_features(), CpuFeature::sse4_1)) REQUIRE_FALSE(text.empty());
#endif
  return text;
}

}  // namespace

TEST_CASE("constructing layers prints this build's notice exactly once", "[.process][simd_notice]") {
  REQUIRE_FALSE(synattn::detail::simd_notice_state().decided());  // a fresh process
  ::unsetenv("SYNATTN_SIMD_NOTICE");
  const std::string expected = expected_notice();
  const std::string err = construct_layers_capturing_stderr();
  CAPTURE(synattn::feature_names(synattn::cpu_features()), synattn::feature_names(synattn::build_cpu_features()));
  CHECK(err == expected);  // all of it once, or nothing when nothing is missing
  CHECK(count(err, kHead) == (expected.empty() ? 0u : 1u));
  CHECK(synattn::detail::simd_notice_state().decided());
}

TEST_CASE("SYNATTN_SIMD_NOTICE=0 silences the layer's notice", "[.process][simd_notice]") {
  REQUIRE_FALSE(synattn::detail::simd_notice_state().decided());
  expected_notice();
  ::setenv("SYNATTN_SIMD_NOTICE", "0", 1);
  const std::string err = construct_layers_capturing_stderr();
  ::unsetenv("SYNATTN_SIMD_NOTICE");
  CHECK(err.empty());
}

TEST_CASE("set_simd_notice(false) silences the layer's notice", "[.process][simd_notice]") {
  REQUIRE_FALSE(synattn::detail::simd_notice_state().decided());
  expected_notice();
  ::unsetenv("SYNATTN_SIMD_NOTICE");
  synattn::set_simd_notice(false);
  const std::string err = construct_layers_capturing_stderr();
  CHECK(err.empty());
}

// retain_freed_memory(): a block freed and allocated again is reused without
// the OS faulting its pages in again. The only test in its program, so that
// no earlier large free has already moved glibc's dynamic mmap threshold.
#include <catch2/catch.hpp>

#include <synattn/util/memory.hpp>

#include <sys/resource.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

// AddressSanitizer replaces malloc: glibc's settings do not apply, and
// mallopt says so (returns 0).
#if defined(__SANITIZE_ADDRESS__)
#define SYNATTN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SYNATTN_TEST_ASAN 1
#endif
#endif

namespace {

[[maybe_unused]] long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Allocates `bytes`, writes every page (so the kernel must provide them),
// frees; returns the minor page faults this took.
[[maybe_unused]] long faults_of_touched_block(std::size_t bytes) {
  const long before = minor_faults();
  auto* p = static_cast<unsigned char*>(std::malloc(bytes));
  REQUIRE(p != nullptr);
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = static_cast<unsigned char>(i);
  volatile unsigned char sink = p[bytes / 2];
  (void)sink;
  std::free(p);
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("retain_freed_memory: a freed 24 MiB block is reused without page faults", "[memory]") {
#if defined(__GLIBC__) && !defined(SYNATTN_TEST_ASAN)
  REQUIRE(synattn::retain_freed_memory());
  const std::size_t bytes = 24u << 20;  // 6144 pages of 4 KiB
  const long first = faults_of_touched_block(bytes);
  CHECK(first >= 1000);  // the first use is fresh memory (a check that the count works at all)
  // With glibc's defaults the block is mmapped, returned on free and faulted
  // in again (about 6144 faults each time); retained, its pages are reused.
  long again = 0;
  for (int i = 0; i < 5; ++i) again += faults_of_touched_block(bytes - static_cast<std::size_t>(i) * 4096 * 16);
  INFO("first use: " << first << " faults; five reuses: " << again);
  CHECK(again < 200);
#else
  CHECK_FALSE(synattn::retain_freed_memory());  // not glibc's allocator: nothing changed, and it says so
#endif
}

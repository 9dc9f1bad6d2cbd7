// Test support: the bytes the heap holds for the program now (malloc and
// operator new alike, Eigen's matrices included), so a test can measure what
// a call keeps by the difference. Under AddressSanitizer its allocator's own
// count; with glibc mallinfo2 (arena plus mmap'd chunks, where the large
// buffers go). heap_bytes_available() says whether either exists here.
#ifndef SYNATTN_TESTS_SUPPORT_HEAP_BYTES_HPP
#define SYNATTN_TESTS_SUPPORT_HEAP_BYTES_HPP

#include <cstdlib>  // defines __GLIBC__ where glibc is the C library

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SYNATTN_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SYNATTN_TEST_ASAN 1
#endif

#if defined(SYNATTN_TEST_ASAN)
#include <cstddef>
// The ASan runtime defines this whichever compiler links it; GCC installs no
// <sanitizer/allocator_interface.h> to declare it (clang's compiler-rt does),
// so the declaration is written here.
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

namespace synattn_test {

inline bool heap_bytes_available() {
#if defined(SYNATTN_TEST_ASAN) || (defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33))
  return true;
#else
  return false;
#endif
}

inline long long heap_bytes() {
#if defined(SYNATTN_TEST_ASAN)
  return static_cast<long long>(__sanitizer_get_current_allocated_bytes());
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 m = mallinfo2();
  return static_cast<long long>(m.uordblks) + static_cast<long long>(m.hblkhd);
#else
  return 0;
#endif
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_SUPPORT_HEAP_BYTES_HPP

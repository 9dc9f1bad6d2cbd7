// Counts heap allocations made through operator new, so that a test can
// check that warm calls allocate nothing: include this header in exactly one
// file of a test program (it replaces the program's global operator new and
// delete) and read g_allocations before and after. Every non-aligned form is
// replaced, so no pointer from a sanitizer's own operator new reaches our
// free(). Not inlined: GCC would otherwise see free() on a pointer from
// operator new at every call site and warn (-Wmismatched-new-delete).
// Eigen allocates with malloc, not operator new: define
// EIGEN_RUNTIME_NO_MALLOC to check its allocations too.
#ifndef SYNATTN_TESTS_COUNT_ALLOCATIONS_HPP
#define SYNATTN_TESTS_COUNT_ALLOCATIONS_HPP

#include <cstdlib>
#include <new>

static long long g_allocations = 0;
namespace {
void* counted_malloc(std::size_t n) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
}  // namespace
__attribute__((noinline)) void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
__attribute__((noinline)) void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

#endif  // SYNATTN_TESTS_COUNT_ALLOCATIONS_HPP

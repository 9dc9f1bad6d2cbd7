// synattn — keeping freed memory for reuse in training loops.
//
// The layers' caches are Eigen matrices sized by the batch. When successive
// batches have different shapes (sentences batched by length), every cache
// is freed and allocated again at each step. glibc's malloc serves blocks of
// a few MiB with mmap and gives freed ones back to the OS, so the next step
// faults every page in again and the kernel zeroes it: on the train_deprel
// recipe that was 285,000 page faults in 10 epochs and a fifth of the run
// time. PyTorch on CPU pays the same (it has no caching allocator there).
//
// retain_freed_memory() asks glibc to serve blocks up to 32 MiB from the
// heap and to keep up to 1 GiB of freed heap memory instead of returning it
// to the OS: freed caches are then reused as they are. It changes the whole
// process's allocator, which is why the library never calls it on its own:
// a program opts in, once, at start-up (train_deprel does). Peak memory does
// not grow (the heap holds what the largest step needs anyway); memory is
// returned to the OS only when more than 1 GiB is free at the heap's top.
// Another allocator (jemalloc, tcmalloc through LD_PRELOAD) achieves the same.
#ifndef SYNATTN_UTIL_MEMORY_HPP
#define SYNATTN_UTIL_MEMORY_HPP

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace synattn {

// Blocks up to this size come from the heap after retain_freed_memory():
// glibc's largest mmap threshold on 64-bit systems.
constexpr int kRetainedBlockLimit = 32 * 1024 * 1024;
// Freed heap memory kept before any is returned to the OS.
constexpr int kRetainedHeapLimit = 1024 * 1024 * 1024;

// Makes freed memory stay in the process for reuse (see above). Returns
// whether the allocator accepted both settings: true with glibc's malloc;
// false elsewhere, or where another allocator replaced it (AddressSanitizer's,
// for one), and nothing changes then.
inline bool retain_freed_memory() noexcept {
#if defined(__GLIBC__)
  const bool block = mallopt(M_MMAP_THRESHOLD, kRetainedBlockLimit) == 1;
  const bool heap = mallopt(M_TRIM_THRESHOLD, kRetainedHeapLimit) == 1;
  return block && heap;
#else
  return false;
#endif
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_MEMORY_HPP

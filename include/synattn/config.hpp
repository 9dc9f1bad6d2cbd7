// synattn — version, build checks and small portability shims shared by every header.
#ifndef SYNATTN_CONFIG_HPP
#define SYNATTN_CONFIG_HPP

#define SYNATTN_VERSION_MAJOR 0
#define SYNATTN_VERSION_MINOR 1
#define SYNATTN_VERSION_PATCH 0
#define SYNATTN_VERSION_STRING "0.1.0"

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "synattn needs C++17 or newer"
#endif

// Masking puts -inf into attention scores, and a row with no visible key is
// detected through that -inf. -ffast-math / -ffinite-math-only lets the
// compiler assume infinities never happen, which silently breaks both.
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "synattn must not be built with -ffast-math or -ffinite-math-only: attention masks rely on -inf"
#endif

// Internal invariants: checked in debug builds, compiled out in release.
// User input is never checked with this; it is validated and thrown on.
#include <cassert>
#define SYNATTN_ASSERT(cond) assert(cond)

#endif  // SYNATTN_CONFIG_HPP

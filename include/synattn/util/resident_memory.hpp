// synattn — the process's resident memory, for benchmarks and examples that
// report what a run needed: now, and the peak since the last reset.
//
// Linux only (/proc/self): VmHWM is the peak, and writing "5" to
// /proc/self/clear_refs resets it to the current resident size, so one
// process can measure several phases (getrusage's ru_maxrss cannot be reset).
// Elsewhere every function returns 0 and the reset does nothing.
#ifndef SYNATTN_UTIL_RESIDENT_MEMORY_HPP
#define SYNATTN_UTIL_RESIDENT_MEMORY_HPP

#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace synattn {

// Peak resident bytes since the process started or reset_resident_peak().
inline double resident_peak_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) * 1024.0;  // kB
  return 0;
}

inline void reset_resident_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

// Resident bytes now.
inline double resident_bytes() {
#if defined(__linux__)
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
#else
  return 0;
#endif
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_RESIDENT_MEMORY_HPP

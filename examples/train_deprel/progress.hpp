// train_deprel — a progress line: epoch, step, loss, dev accuracy, tokens/s
// and ETA. On a terminal it is rewritten in place ('\r', then the line, then
// ESC[K to clear what a longer previous line left) and ends with a newline
// at each epoch, so one line per epoch stays on screen; elsewhere (a log
// file, CI) step updates print nothing and each epoch prints one plain line.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_PROGRESS_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_PROGRESS_HPP

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>
#include <string>

namespace train_deprel {

struct ProgressState {
  std::string run;               // e.g. "shared N=500 seed 1"
  int epoch = 0;                 // 1-based
  int epochs = 0;
  long step = 0;                 // 1-based within the epoch
  long steps = 0;                // per epoch
  double loss = NAN;             // running mean training loss of the epoch
  double dev_accuracy = NAN;     // percent; NaN before the first evaluation
  double tokens_per_second = NAN;
  double eta_seconds = NAN;      // NaN: unknown
};

// "1h02m", "3m05s", "12s"; "?" when unknown or negative.
inline std::string format_duration(double seconds) {
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

// Remaining time if the remaining work goes at the pace so far.
inline double eta_seconds(double elapsed, double done, double total) {
  if (!(done > 0.0) || !(total >= done)) return NAN;
  return elapsed / done * (total - done);
}

// The line itself (no '\r', no newline).
inline std::string format_progress(const ProgressState& p) {
  char buf[256];
  std::string dev = std::isnan(p.dev_accuracy) ? std::string("-") : std::string();
  if (dev.empty()) {
    char d[32];
    std::snprintf(d, sizeof d, "%.2f%%", p.dev_accuracy);
    dev = d;
  }
  std::snprintf(buf, sizeof buf, "epoch %d/%d step %ld/%ld loss %.4f dev %s %.0f tok/s ETA %s",
                p.epoch, p.epochs, p.step, p.steps, p.loss, dev.c_str(),
                std::isnan(p.tokens_per_second) ? 0.0 : p.tokens_per_second,
                format_duration(p.eta_seconds).c_str());
  return p.run.empty() ? std::string(buf) : p.run + ": " + buf;
}

class Progress {
 public:
  // Interactive when stderr is a terminal.
  Progress() : Progress(std::cerr, isatty(fileno(stderr)) != 0) {}
  Progress(std::ostream& out, bool interactive) : out_(out), interactive_(interactive) {}

  bool interactive() const noexcept { return interactive_; }

  // During an epoch: rewrites the line on a terminal, nothing otherwise.
  void update(const ProgressState& p) {
    if (!interactive_) return;
    out_ << '\r' << format_progress(p) << "\x1b[K" << std::flush;
    open_ = true;
  }

  // After an epoch's evaluation: the final line of the epoch.
  void end_epoch(const ProgressState& p) {
    if (interactive_) out_ << '\r' << format_progress(p) << "\x1b[K\n" << std::flush;
    else out_ << format_progress(p) << '\n' << std::flush;
    open_ = false;
  }

  // A message on its own line (ends a pending in-place line first).
  void note(const std::string& text) {
    if (open_) out_ << '\n';
    open_ = false;
    out_ << text << '\n' << std::flush;
  }

 private:
  std::ostream& out_;
  bool interactive_;
  bool open_ = false;
};

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_PROGRESS_HPP

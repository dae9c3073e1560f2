#pragma once
// Progress of a measurement run on stderr, wherever it runs (`--progress`):
// on a terminal one line rewritten in place; off one (nohup, batch jobs,
// pipes) a line when each pair starts and ends and a heartbeat at least
// every `heartbeat_s` of wall time while a pair runs.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.hpp"

namespace latest::cli {

enum class ProgressMode { tty, lines, none };
// auto | tty | lines | none; auto is tty on a terminal, else lines.
ProgressMode parse_progress_mode(const std::string& name, bool terminal);

class ProgressPrinter {
 public:
  using Clock = std::function<double()>;  // wall seconds
  // `label` goes before each line ("GPU 1: ") where several GPUs print.
  ProgressPrinter(ProgressMode mode, std::FILE* out, double heartbeat_s = 30, Clock clock = {}, std::string label = {});
  void started(ClockPair pair, std::size_t number, std::size_t count);
  void update(const Progress& p);
  void finished(const PairResult& r, const std::string& why_skipped);
  void clear_line() const;

 private:
  void line(const std::string& text);
  ProgressMode mode_;
  std::FILE* out_;
  double heartbeat_s_;
  Clock clock_;
  std::string label_;
  double last_line_s_ = 0;
  // Each running pair's number: the chained schedule starts both directions
  // of a pair of clocks together, so the last one started is not always
  // the one that ends.
  std::vector<std::pair<ClockPair, std::size_t>> running_;
  std::size_t count_ = 0;
};

}  // namespace latest::cli

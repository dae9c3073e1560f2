#include "cli/progress.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cli/run_session.hpp"
#include "core/error.hpp"

namespace latest::cli {

ProgressMode parse_progress_mode(const std::string& name, bool terminal) {
  if (name == "auto") return terminal ? ProgressMode::tty : ProgressMode::lines;
  if (name == "tty") return ProgressMode::tty;
  if (name == "lines") return ProgressMode::lines;
  if (name == "none") return ProgressMode::none;
  throw Error(ErrorKind::bad_argument, fmt::format("unknown --progress '{}'", name),
              "use auto (a terminal line, else a line per event), tty, lines or none");
}

ProgressPrinter::ProgressPrinter(ProgressMode mode, std::FILE* out, double heartbeat_s, Clock clock, std::string label)
    : mode_(mode), out_(out), heartbeat_s_(heartbeat_s), clock_(std::move(clock)), label_(std::move(label)) {
  if (!clock_) {
    const auto start = std::chrono::steady_clock::now();
    clock_ = [start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  }
}

void ProgressPrinter::line(const std::string& text) {
  fmt::print(out_, "latest: {}{}\n", label_, text);
  std::fflush(out_);
  last_line_s_ = clock_();
}

void ProgressPrinter::started(ClockPair pair, std::size_t number, std::size_t count) {
  running_.emplace_back(pair, number);
  count_ = count;
  if (mode_ == ProgressMode::lines) line(fmt::format("pair {}/{} {} -> {} MHz started", number, count, pair.init, pair.target));
}

void ProgressPrinter::update(const Progress& p) {
  const double rse = std::isfinite(p.rse) ? p.rse * 100 : 0.0;
  if (mode_ == ProgressMode::tty) {
    fmt::print(out_, "\r\033[Kpair {}/{}  {} -> {} MHz  n={}  RSE {:.1f}%  ETA {}", p.pair_number, p.pair_count,
               p.pair.init, p.pair.target, p.measurements, rse, duration_text(p.eta_s));
    std::fflush(out_);
  } else if (mode_ == ProgressMode::lines && clock_() - last_line_s_ >= heartbeat_s_) {
    line(fmt::format("pair {}/{} {} -> {} MHz n={} RSE {:.1f}% ETA {}", p.pair_number, p.pair_count, p.pair.init,
                     p.pair.target, p.measurements, rse, duration_text(p.eta_s)));
  }
}

void ProgressPrinter::finished(const PairResult& r, const std::string& why_skipped) {
  if (mode_ != ProgressMode::lines) return;
  std::string where = "pair ";
  const auto own = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.first == r.pair; });
  if (own != running_.end()) {
    where = fmt::format("pair {}/{} ", own->second, count_);
    running_.erase(own);
  }
  if (r.status == "measured")
    line(fmt::format("{}{} -> {} MHz measured: n={} RSE {:.1f}%", where, r.pair.init, r.pair.target, r.rows.size(),
                     std::isfinite(r.rse) ? r.rse * 100 : 0.0));
  else
    line(fmt::format("{}{} -> {} MHz skipped: {}", where, r.pair.init, r.pair.target, why_skipped));
}

void ProgressPrinter::clear_line() const {
  if (mode_ == ProgressMode::tty) fmt::print(out_, "\r\033[K");
}

}  // namespace latest::cli

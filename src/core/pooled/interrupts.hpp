#pragma once
// Interrupts: a long iteration on one SM moves that SM's boundaries, not the
// clock, and is taken out before the detector fits anything
// (pooled_detection.cpp). Of internal linkage, as boundaries.hpp says why.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/pooled/sm_state.hpp"
#include "core/types.hpp"

namespace latest::pooled {
namespace {

// An interrupt taken out (Boundaries::shorten): its SM's place among the
// window's records, when it began and the length it was given.
struct Interrupt {
  std::size_t sm = 0;
  Nanos start = 0;
  Nanos like = 0;
};

// Long iterations on one SM are interrupts: they move that SM's boundaries
// on one side, not the clock, and are taken out, keeping the later
// boundaries where the interrupt began before `keep_later_before[sm]` (the
// SM's change is after it), else the earlier ones. Long iterations on at
// least `global_share` of the SMs at once (a stall while the clock relocks)
// are the clock's and stay. Returns the interrupts taken out.
inline std::vector<Interrupt> remove_interrupts(std::vector<SmState>& sms, double global_share,
                                                const std::vector<Nanos>& keep_later_before) {
  struct Long {
    Nanos start;
    SmState* sm;
    std::int64_t index;
  };
  std::vector<Long> longs;
  for (auto& st : sms)
    for (std::int64_t i : st.e.long_iterations()) longs.push_back({st.e.at(i), &st, i});
  std::sort(longs.begin(), longs.end(), [](const Long& a, const Long& b) { return a.start < b.start; });
  const double needed = global_share * static_cast<double>(sms.size());
  std::vector<const Long*> interrupts;
  for (std::size_t a = 0; a < longs.size(); ++a) {
    // Others that began a long iteration within one such iteration of this one.
    const Nanos span = longs[a].sm->e.duration(longs[a].index);
    std::size_t near = 0;
    for (std::size_t b = a; b-- > 0 && longs[a].start - longs[b].start <= span;) ++near;
    for (std::size_t b = a + 1; b < longs.size() && longs[b].start - longs[a].start <= span; ++b) ++near;
    if (static_cast<double>(near + 1) < needed) interrupts.push_back(&longs[a]);
  }
  std::vector<Interrupt> taken;
  for (const Long* l : interrupts) {
    const auto sm = static_cast<std::size_t>(l->sm - sms.data());
    l->sm->e.shorten(l->index, l->start < keep_later_before[sm]);
    taken.push_back({sm, l->start, l->sm->e.duration(l->index)});
  }
  return taken;
}

}  // namespace
}  // namespace latest::pooled

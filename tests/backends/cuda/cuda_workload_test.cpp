// The stream's ring, host-side (no GPU needed): the records a drain reads
// from a copy of the ring, and the records it must refuse as lost.
#include "backends/cuda/cuda_workload.hpp"

#include <gtest/gtest.h>

#include <random>

#include "backends/cuda/kernels.hpp"
#include "core/error.hpp"

namespace latest::cuda {
namespace {

constexpr int kShift = 2;  // 4 slots
constexpr int kBlocks = 2;

// One record as the kernel stores it (kernels.hpp).
std::uint64_t slot_word(long long record, std::uint32_t ns, std::uint32_t cycles) {
  return static_cast<std::uint64_t>(cycles) << 32 |
         static_cast<std::uint64_t>(ring_tag(record, kShift)) << kRingDurationBits | ns;
}

struct Ring {
  std::vector<std::uint64_t> slots = std::vector<std::uint64_t>((1u << kShift) * kBlocks, 0);
  void write(int block, long long record, std::uint32_t ns, std::uint32_t cycles) {
    slots[static_cast<std::size_t>((record & ((1 << kShift) - 1)) * kBlocks + block)] = slot_word(record, ns, cycles);
  }
};

TEST(StreamRing, ReadsUpToTheFirstSlotNotWrittenYet) {
  Ring ring;
  for (long long i = 0; i < 3; ++i) ring.write(1, i, 1000 + static_cast<std::uint32_t>(i), 1980 + static_cast<std::uint32_t>(i));
  ring.write(0, 0, 7, 8);
  SmRecords out;
  EXPECT_EQ(read_ring_block(ring.slots.data(), kBlocks, 1, kShift, 0, 4, out), 3);
  EXPECT_EQ(out.duration_ns, (std::vector<std::uint32_t>{1000, 1001, 1002}));
  EXPECT_EQ(out.cycles, (std::vector<std::uint32_t>{1980, 1981, 1982}));
  SmRecords other;
  EXPECT_EQ(read_ring_block(ring.slots.data(), kBlocks, 0, kShift, 0, 4, other), 1) << "blocks do not mix";
  EXPECT_EQ(other.duration_ns, (std::vector<std::uint32_t>{7}));
}

TEST(StreamRing, ASlotOfTheLapBeforeIsNotWrittenYet) {
  Ring ring;
  for (long long i = 0; i < 4; ++i) ring.write(0, i, 10, 20);
  for (long long i = 4; i < 7; ++i) ring.write(0, i, 30 + static_cast<std::uint32_t>(i), 40);
  SmRecords out;
  EXPECT_EQ(read_ring_block(ring.slots.data(), kBlocks, 0, kShift, 4, 9, out), 3) << "slot 3 still holds record 3";
  EXPECT_EQ(out.duration_ns, (std::vector<std::uint32_t>{34, 35, 36}));
}

TEST(StreamRing, TagsWrapAfterTheirLaps) {
  // Record 252 is lap 63, whose tag is 1 again; the lap before's is 63.
  Ring ring;
  const long long first = 63LL << kShift;
  for (long long i = first - 4; i < first; ++i) ring.write(0, i, 5, 6);
  ring.write(0, first, 99, 100);
  SmRecords out;
  EXPECT_EQ(read_ring_block(ring.slots.data(), kBlocks, 0, kShift, first, first + 4, out), 1);
  EXPECT_EQ(out.duration_ns, (std::vector<std::uint32_t>{99}));
}

TEST(StreamRing, AnOverwrittenRecordIsAnErrorNotAGap) {
  Ring ring;
  for (long long i = 0; i < 6; ++i) ring.write(0, i, 10, 20);  // records 4 and 5 overwrote 0 and 1
  SmRecords out;
  try {
    read_ring_block(ring.slots.data(), kBlocks, 0, kShift, 1, 6, out);
    FAIL() << "record 1 was lost";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("record 1 of block 0 was overwritten"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_ring_block(ring.slots.data(), kBlocks, 0, kShift, 2, 6, out), 4) << "read in time, nothing is lost";
}

TEST(StreamRing, CopiesOneRunOrTwoWhereTheSlotsWrap) {
  using Runs = std::vector<std::pair<long long, long long>>;
  EXPECT_EQ(ring_copies(0, 3, kShift), (Runs{{0, 3}}));
  EXPECT_EQ(ring_copies(5, 7, kShift), (Runs{{1, 2}})) << "lap 1, slots 1-2";
  EXPECT_EQ(ring_copies(3, 6, kShift), (Runs{{3, 1}, {0, 2}})) << "the end of the ring, then its start";
  EXPECT_EQ(ring_copies(4, 8, kShift), (Runs{{0, 4}})) << "exactly one lap";
  EXPECT_EQ(ring_copies(2, 11, kShift), (Runs{{2, 2}, {0, 2}})) << "more than a lap: one ring's worth, the rest lost";
  EXPECT_TRUE(ring_copies(6, 6, kShift).empty());
}

// Records held for the engine while it does not drain: each read's room is
// made before it, so reading never moves what is held (no copy to grow,
// however long the engine waits), and a drain gets them all back in order,
// with where the first began. Random reads, long and short, some stopping
// early (at a slot not yet written), drains now and then.
TEST(StreamPending, RecordsHeldAreNeverCopiedToGrowAndComeBackInOrder) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    PendingRecords pending;
    std::vector<std::uint32_t> want;
    Nanos want_start = -1, next_start = 1000;
    int chunks_started = 0;
    const std::uint32_t* last_data = nullptr;
    for (int read = 0; read < 400; ++read) {
      const std::size_t more = rng() % 8 == 0 ? rng() % 70'000 : rng() % 600;
      SmRecords& rec = pending.room_for(more, next_start);
      if (want.empty()) want_start = next_start;
      const std::uint32_t* data = rec.duration_ns.data();
      const std::size_t capacity = rec.duration_ns.capacity(), held = rec.duration_ns.size();
      chunks_started += held == 0;
      // Going on in the chunk of the read before: where it was.
      if (held > 0) {
        ASSERT_EQ(data, last_data) << "seed " << seed << ", read " << read;
      }
      const std::size_t got = rng() % 4 == 0 ? more / 2 : more;
      for (std::size_t k = 0; k < got; ++k) {
        const auto d = static_cast<std::uint32_t>(rng() % 5000);
        rec.duration_ns.push_back(d);
        rec.cycles.push_back(d + 1);
        want.push_back(d);
        next_start += d;
      }
      ASSERT_EQ(rec.duration_ns.capacity(), capacity) << "seed " << seed << ", read " << read;
      ASSERT_EQ(rec.duration_ns.data(), data) << "seed " << seed << ", read " << read;
      last_data = data;
      if (rng() % 25 == 0 || read == 399) {
        const SmRecords all = pending.take();
        EXPECT_TRUE(pending.empty());
        ASSERT_EQ(all.duration_ns, want) << seed;
        ASSERT_EQ(all.cycles.size(), want.size()) << seed;
        for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(all.cycles[i], want[i] + 1) << seed;
        if (!want.empty()) {
          EXPECT_EQ(all.first_start_ns, want_start) << seed;
        }
        want.clear();
      }
    }
    EXPECT_GT(chunks_started, 20) << seed;
  }
}

}  // namespace
}  // namespace latest::cuda

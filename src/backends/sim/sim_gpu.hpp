#pragma once
// The simulated card: virtual host time, a modelled SM clock that follows
// requests after the profile's latency, per-SM iteration records with the
// timer's tick and jitter, timer synchronisation, and injected throttling.
// SimWorkload and SimClockControl are thin views of one SimGpu.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "backends/sim/random.hpp"
#include "backends/sim/sim_profile.hpp"
#include "core/clock_control.hpp"
#include "core/types.hpp"

namespace latest::sim {

struct Injection {
  std::vector<double> thermal_at_s;  // virtual seconds at which an 8 s thermal event starts
  std::optional<Mhz> power_cap_mhz;  // clocks above it cannot be held
  // A request for this clock is taken, and the clock goes one step lower
  // with no reason given: a driver that accepted the call and did something else.
  std::optional<Mhz> unheld_mhz;
  std::optional<RampShape> ramp_shape;  // every switch takes this shape, not the profile's draw
  // RMS (ns) of a wander common to every SM's timer readings over
  // milliseconds, no clock change: some H200s move by 15-25 ns within a
  // millisecond (docs/hardware.md).
  double boundary_wander_ns = 0;
};

class SimGpu {
 public:
  // `card`: which card of the model (its own latencies; 0 is the profile's).
  SimGpu(const SimProfile& profile, std::uint64_t seed, Injection injection = {}, int card = 0);

  const SimProfile& profile() const { return profile_; }
  std::uint64_t seed() const { return seed_; }
  int card() const { return card_; }
  Nanos now() const { return now_; }
  void advance_to(Nanos host_ns) { now_ = std::max(now_, host_ns); }

  // The modelled clock starts to change after the profile's latency.
  void request_clock(Nanos host_ns, Mhz target);
  std::optional<SwitchTruth> last_truth() const { return last_truth_; }
  double draw_call_latency_ms();

  Nanos launch(const WindowSpec& spec);
  WindowRecords collect();
  // A launch that records until stopped; drain() generates what each SM
  // has finished by now (records are made lazily, so requests made between
  // drains shape them).
  Nanos start_stream(const WindowSpec& spec);
  WindowRecords drain();
  void stop_stream() { stream_.clear(); }

  // The card's true GPU time at a host time: what a perfect sync would give.
  Nanos true_gpu_time(Nanos host_ns) const { return to_gpu(host_ns); }

  TimerSync synchronize();
  Telemetry telemetry();

  // A power brake under load (`latest watch --backend sim`), the card moving
  // its own clock: from `host_ns` the clock drops to a capped level, then
  // steps back and forth between that clock and the next lower one, each
  // held 0.1-3 s, for up to `seconds`; release() ends it, and the clock
  // climbs back to the top in a few held steps. Every step is a jump; each
  // group of SMs takes it late by its own skew, fixed for the brake.
  struct ClockStep {
    Nanos gpu_ns = 0;
    double from_mhz = 0, to_mhz = 0;
  };
  void brake(Nanos host_ns, double seconds);
  void release(Nanos host_ns);
  const std::vector<ClockStep>& brake_steps() const { return brake_steps_; }
  // How late an SM's group takes a change.
  double sm_skew_ns(int sm) const;

 private:
  struct Segment {
    Nanos gpu_start;
    double mhz;
  };
  Nanos to_gpu(Nanos host) const;
  Nanos to_host(Nanos gpu) const;
  double mhz_at(Nanos gpu) const;
  std::size_t segment_index(Nanos gpu) const;
  // Moves t forward by `count` iterations of `cycles`; returns the new time.
  double advance_iterations(double t, std::size_t& seg, std::int64_t count, double cycles) const;
  double advance_one(double t, std::size_t& seg, double cycles) const;
  void generate_sm(const WindowSpec& spec, int sm, std::uint64_t window_seed, SmRecords& out, double& end_ns) const;
  // One SM of a running stream: where its next iteration starts.
  struct SmStream {
    int sm = 0;
    double t = 0;       // on the SM's own (skew-shifted) axis
    Random rng{0};
    Nanos prev = 0;     // the last timer read
    double cycles = 0;
    double skew = 0;    // the group's, as last applied
  };
  void drain_sm(SmStream& st, double until_gpu_ns, SmRecords& out) const;
  void add_brake_step(Nanos gpu_ns, double to_mhz);
  double iteration_cycles(const WindowSpec& spec, int sm) const;
  // Runs `work(from, to)` over `sms` SMs, split over the cores when
  // `volume` (SM-iterations) is worth a thread.
  void for_sms(std::size_t sms, std::int64_t volume, const std::function<void(std::size_t, std::size_t)>& work) const;
  // The clock's path from departure to arrival: (start, MHz) segments.
  std::vector<std::pair<Nanos, double>> ramp(RampShape shape, double from, double to, Nanos departure, Nanos arrival);
  RampShape draw_shape();

  SimProfile profile_;
  std::uint64_t seed_;
  int card_;
  Injection injection_;
  Random rng_;
  Random shape_rng_;                  // ramp shapes and group skews, apart from the latencies
  std::vector<double> group_skew_ns_; // per group of SMs, this switch's
  Nanos now_ = 1'000'000'000;  // host virtual time
  Nanos gpu_offset_ns_;        // true globaltimer - host offset at host 0
  double drift_ppm_;           // mean drift of the GPU's timer against the host's
  double wander_phase_;        // the drift wanders around its mean (to_gpu)
  // Injection::boundary_wander_ns: sinusoids (amplitude ns, radians per ns,
  // phase) whose sum every SM's timer readings carry.
  struct Sinusoid {
    double amplitude_ns, per_ns, phase;
  };
  std::vector<Sinusoid> boundary_wander_;
  double boundary_wander(double gpu_ns) const;
  std::vector<Segment> timeline_;
  std::vector<double> sm_extra_cycles_;
  Mhz requested_;
  std::optional<SwitchTruth> last_truth_;
  std::optional<WindowSpec> pending_;
  Nanos pending_gpu_start_ = 0;
  std::vector<SmStream> stream_;  // empty when no stream runs
  std::vector<ClockStep> brake_steps_;
};

}  // namespace latest::sim

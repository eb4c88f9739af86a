#include "api/coherence_selftest.hpp"

#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <random>
#include <vector>

#include "api/runtime.hpp"
#include "device/host/host_platform.hpp"

namespace unimem {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 31);
}

// What one kernel (partition) does to its buffer arguments; shared by the device kernel and the
// flat-memory oracle so both compute exactly the same thing.
struct KernelSpec {
  std::uint64_t salt = 0;
  std::vector<std::size_t> buffers;  // indices into the program's buffers, distinct
  std::vector<BufferAccess> access;  // per argument

  // Reads happen before any write, as on a device (the launch's writes land after its reads).
  std::uint64_t digest(const std::vector<const std::byte*>& mem) const {
    std::uint64_t h = mix(0, salt);
    for (std::size_t j = 0; j < buffers.size(); ++j) {
      const IntervalSet needed = access[j].reads.unite(access[j].may_writes);
      for (const Interval& r : needed) {
        for (std::uint64_t o = r.begin; o < r.end; ++o) {
          h = mix(h, (o << 8) | std::to_integer<std::uint64_t>(mem[j][o]));
        }
      }
    }
    return h;
  }
  void write(std::uint64_t h, const std::vector<std::byte*>& mem) const {
    for (std::size_t j = 0; j < buffers.size(); ++j) {
      for (const Interval& r : access[j].writes) {
        for (std::uint64_t o = r.begin; o < r.end; ++o) {
          mem[j][o] = static_cast<std::byte>(mix(h, (j << 40) | o) & 0xFF);
        }
      }
      for (const Interval& r : access[j].may_writes.subtract(access[j].writes)) {
        for (std::uint64_t o = r.begin; o < r.end; ++o) {
          const std::uint64_t v = mix(h, (j << 40) | o);
          if ((v & 3) == 0) mem[j][o] = static_cast<std::byte>((v >> 8) & 0xFF);
        }
      }
    }
  }
};

// The flat single memory plus the lazy protocol's byte-exact copy count (a dense model of
// DSOM Table 1: one AgentMask per byte).
class Oracle {
 public:
  Oracle(const std::vector<std::uint64_t>& sizes, bool peer) : peer_(peer) {
    for (std::uint64_t s : sizes) {
      memory_.emplace_back(s, std::byte{0});
      masks_.emplace_back(s, AgentMask::of(kHostAgent));
    }
  }
  std::vector<std::byte>& memory(std::size_t b) { return memory_[b]; }
  std::uint64_t minimum() const { return minimum_; }

  void device_read(std::size_t b, Agent d, const IntervalSet& bytes) {
    for (const Interval& r : bytes) {
      for (std::uint64_t o = r.begin; o < r.end; ++o) {
        AgentMask& m = masks_[b][o];
        if (m.contains(d)) continue;
        if (m.contains(kHostAgent) || peer_) {
          minimum_ += 1;
          m = m.with(d);
        } else {
          minimum_ += 2;  // write back, then copy from home
          m = m.with(kHostAgent).with(d);
        }
      }
    }
  }
  void host_read(std::size_t b, const Interval& r) {
    for (std::uint64_t o = r.begin; o < r.end; ++o) {
      AgentMask& m = masks_[b][o];
      if (!m.contains(kHostAgent)) {
        minimum_ += 1;
        m = m.with(kHostAgent);
      }
    }
  }
  void set_owner(std::size_t b, const IntervalSet& bytes, Agent a) {
    for (const Interval& r : bytes) {
      for (std::uint64_t o = r.begin; o < r.end; ++o) masks_[b][o] = AgentMask::of(a);
    }
  }

 private:
  bool peer_;
  std::vector<std::vector<std::byte>> memory_;
  std::vector<std::vector<AgentMask>> masks_;
  std::uint64_t minimum_ = 0;
};

class ProgramGenerator {
 public:
  explicit ProgramGenerator(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool chance(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }

  Interval interval_in(std::uint64_t lo, std::uint64_t hi) {  // non-empty, within [lo, hi)
    const std::uint64_t b = lo + below(hi - lo);
    const std::uint64_t max_len = std::max<std::uint64_t>(1, (hi - lo) / 2);
    const std::uint64_t len = 1 + below(std::min(max_len, hi - b));
    return {b, b + len};
  }
  IntervalSet set_in(std::uint64_t lo, std::uint64_t hi, int max_pieces) {
    std::vector<Interval> pieces;
    const int n = 1 + static_cast<int>(below(static_cast<std::uint64_t>(max_pieces)));
    for (int i = 0; i < n; ++i) pieces.push_back(interval_in(lo, hi));
    return IntervalSet::from_unsorted(std::move(pieces));
  }
  std::uint64_t next() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

struct Template {
  std::string kernel;
  std::size_t device = 0;
  KernelSpec spec;
};

}  // namespace

std::string CoherenceSelftestResult::to_json(const CoherenceSelftestOptions& o) const {
  std::string err;
  for (char c : error) {
    if (c == '"' || c == '\\') err += '\\';
    err += (c == '\n') ? ' ' : c;
  }
  return std::string("{\"ok\":") + (ok ? "true" : "false") + ",\"seed\":" + std::to_string(o.seed) +
         ",\"ops\":" + std::to_string(o.ops) + ",\"devices\":" + std::to_string(o.devices) +
         ",\"buffers\":" + std::to_string(o.buffers) + ",\"strategy\":\"" +
         std::string(to_string(o.strategy)) +
         "\",\"peer_copies\":" + (o.peer_copies ? "true" : "false") +
         ",\"mismatched_bytes\":" + std::to_string(mismatched_bytes) +
         ",\"bytes_copied\":" + std::to_string(bytes_copied) +
         ",\"minimum_bytes\":" + std::to_string(minimum_bytes) +
         ",\"copies\":" + std::to_string(copies) + ",\"replays\":" + std::to_string(replays) +
         ",\"mispredictions\":" + std::to_string(mispredictions) +
         ",\"prefetch_bytes\":" + std::to_string(prefetch_bytes) +
         ",\"prefetch_unread_bytes\":" + std::to_string(prefetch_unread_bytes) +
         ",\"launches\":" + std::to_string(launches) +
         ",\"partitioned_launches\":" + std::to_string(partitioned_launches) +
         ",\"host_reads\":" + std::to_string(host_reads) +
         ",\"host_writes\":" + std::to_string(host_writes) + ",\"error\":\"" + err + "\"}";
}

CoherenceSelftestResult run_coherence_selftest(const CoherenceSelftestOptions& opt) {
  UNIMEM_REQUIRE(opt.devices >= 1 && opt.devices <= 16, "selftest: devices must be in 1..16");
  UNIMEM_REQUIRE(opt.buffers >= 1 && opt.buffers <= 64, "selftest: buffers must be in 1..64");
  UNIMEM_REQUIRE(opt.max_buffer_size >= 1, "selftest: max buffer size must be positive");
  CoherenceSelftestResult result;
  ProgramGenerator gen(opt.seed);

  std::vector<std::uint64_t> sizes;
  for (std::size_t b = 0; b < opt.buffers; ++b) sizes.push_back(1 + gen.below(opt.max_buffer_size));
  Oracle oracle(sizes, opt.peer_copies);

  // Data handed to non-blocking calls must outlive them (and the runtime,
  // which waits for everything when destroyed): declared before it.
  std::deque<std::vector<std::byte>> write_data;
  struct PendingRead {
    std::vector<std::byte> got;
    std::vector<std::byte> expected;
    Event done;
  };
  std::deque<PendingRead> reads;

  HostDeviceOptions dev_opt;
  dev_opt.peer_copies = opt.peer_copies;
  Runtime rt(make_host_devices(opt.devices, dev_opt), RuntimeOptions{opt.strategy});
  std::vector<BufferId> ids;
  for (std::size_t b = 0; b < opt.buffers; ++b) {
    ids.push_back(rt.create_buffer(sizes[b], "b" + std::to_string(b)));
  }

  auto random_spec = [&](std::uint64_t lo_frac_parts, std::uint64_t part, bool writes_in_part) {
    KernelSpec spec;
    spec.salt = gen.next();
    const std::size_t nargs = 1 + gen.below(std::min<std::size_t>(3, opt.buffers));
    while (spec.buffers.size() < nargs) {
      const std::size_t b = gen.below(opt.buffers);
      if (std::find(spec.buffers.begin(), spec.buffers.end(), b) == spec.buffers.end()) {
        spec.buffers.push_back(b);
      }
    }
    for (std::size_t b : spec.buffers) {
      const std::uint64_t n = sizes[b];
      BufferAccess acc;
      if (gen.chance(85)) acc.reads = gen.set_in(0, n, 3);
      // Partitioned launches write only inside their own slice, so writes stay disjoint.
      std::uint64_t lo = 0, hi = n;
      if (writes_in_part) {
        lo = n * part / lo_frac_parts;
        hi = n * (part + 1) / lo_frac_parts;
      }
      if (hi > lo) {
        if (gen.chance(75)) acc.writes = gen.set_in(lo, hi, 2);
        if (gen.chance(20)) acc.may_writes = gen.set_in(lo, hi, 2);
      }
      spec.access.push_back(std::move(acc));
    }
    return spec;
  };
  auto make_kernel = [](const std::string& name, std::shared_ptr<const KernelSpec> spec) {
    return std::make_shared<HostKernel>(name, [spec](const HostKernelContext& ctx) {
      std::vector<const std::byte*> in;
      std::vector<std::byte*> out;
      for (std::size_t j = 0; j < spec->buffers.size(); ++j) {
        in.push_back(ctx.buffer<std::byte>(j));
        out.push_back(ctx.buffer<std::byte>(j));
      }
      spec->write(spec->digest(in), out);
    });
  };
  auto args_of = [&](const KernelSpec& spec) {
    std::vector<LaunchArg> args;
    for (std::size_t j = 0; j < spec.buffers.size(); ++j) {
      const BufferAccess& a = spec.access[j];
      args.push_back(LaunchArg::of_buffer(ids[spec.buffers[j]], a.reads, a.writes, a.may_writes));
    }
    return args;
  };
  auto oracle_acquire = [&](const KernelSpec& spec, Agent agent) {
    for (std::size_t j = 0; j < spec.buffers.size(); ++j) {
      oracle.device_read(spec.buffers[j], agent,
                         spec.access[j].reads.unite(spec.access[j].may_writes));
    }
  };
  auto oracle_state = [&](const KernelSpec& spec) {
    std::vector<const std::byte*> in;
    std::vector<std::byte*> out;
    for (std::size_t b : spec.buffers) {
      in.push_back(oracle.memory(b).data());
      out.push_back(oracle.memory(b).data());
    }
    return std::make_pair(in, out);
  };
  auto oracle_written = [&](const KernelSpec& spec, Agent agent) {
    for (std::size_t j = 0; j < spec.buffers.size(); ++j) {
      oracle.set_owner(spec.buffers[j], spec.access[j].writes.unite(spec.access[j].may_writes),
                       agent);
    }
  };

  // A few recurring launches (a program's main loop) so that adaptive histories repeat.
  std::vector<Template> templates;
  const std::size_t template_count = 1 + gen.below(4);
  for (std::size_t t = 0; t < template_count; ++t) {
    templates.push_back(
        {"loop" + std::to_string(t), gen.below(opt.devices), random_spec(1, 0, false)});
  }

  try {
    for (std::size_t op = 0; op < opt.ops; ++op) {
      const std::uint64_t kind = gen.below(100);
      if (kind < 15) {  // host write
        const std::size_t b = gen.below(opt.buffers);
        const Interval r = gen.interval_in(0, sizes[b]);
        std::vector<std::byte> data(r.size());
        for (auto& x : data) x = static_cast<std::byte>(gen.next() & 0xFF);
        std::copy(data.begin(), data.end(), oracle.memory(b).begin() + static_cast<long>(r.begin));
        oracle.set_owner(b, IntervalSet(r), kHostAgent);
        write_data.push_back(std::move(data));
        if (gen.chance(20)) {
          rt.write_blocking(ids[b], r.begin, write_data.back());
        } else {
          (void)rt.write(ids[b], r.begin, write_data.back());
        }
        ++result.host_writes;
      } else if (kind < 30) {  // host read
        const std::size_t b = gen.below(opt.buffers);
        const Interval r = gen.interval_in(0, sizes[b]);
        oracle.host_read(b, r);
        PendingRead pr;
        pr.got.assign(r.size(), std::byte{0});
        pr.expected.assign(oracle.memory(b).begin() + static_cast<long>(r.begin),
                           oracle.memory(b).begin() + static_cast<long>(r.end));
        reads.push_back(std::move(pr));
        if (gen.chance(20)) {
          rt.read_blocking(ids[b], r.begin, reads.back().got);
        } else {
          reads.back().done = rt.read(ids[b], r.begin, reads.back().got);
        }
        ++result.host_reads;
      } else if (kind < 40 && opt.devices >= 2) {  // partitioned launch over several devices
        const std::size_t parts = 2 + gen.below(opt.devices - 1);
        std::vector<std::size_t> devs(opt.devices);
        for (std::size_t i = 0; i < devs.size(); ++i) devs[i] = i;
        std::shuffle(devs.begin(), devs.end(), std::mt19937_64(gen.next()));
        // All partitions share the argument list; each gets its own sets and write slice.
        KernelSpec base = random_spec(1, 0, false);
        std::vector<std::shared_ptr<KernelSpec>> specs;
        std::vector<LaunchPartition> partitions;
        for (std::size_t p = 0; p < parts; ++p) {
          auto spec = std::make_shared<KernelSpec>();
          spec->salt = gen.next();
          spec->buffers = base.buffers;
          for (std::size_t b : base.buffers) {
            const std::uint64_t n = sizes[b];
            BufferAccess acc;
            if (gen.chance(85)) acc.reads = gen.set_in(0, n, 3);
            const std::uint64_t lo = n * p / parts, hi = n * (p + 1) / parts;
            if (hi > lo) {
              if (gen.chance(75)) acc.writes = gen.set_in(lo, hi, 2);
              if (gen.chance(20)) acc.may_writes = gen.set_in(lo, hi, 2);
            }
            spec->access.push_back(std::move(acc));
          }
          specs.push_back(spec);
          LaunchPartition lp;
          lp.device = devs[p];
          lp.kernel = make_kernel("split", spec);
          for (std::size_t j = 0; j < spec->buffers.size(); ++j) lp.accesses[j] = spec->access[j];
          partitions.push_back(std::move(lp));
        }
        // Oracle: every partition reads the state before the launch, then all writes land.
        std::vector<std::uint64_t> digests;
        for (std::size_t p = 0; p < parts; ++p) {
          oracle_acquire(*specs[p], agent_of_device(devs[p]));
          digests.push_back(specs[p]->digest(oracle_state(*specs[p]).first));
        }
        for (std::size_t p = 0; p < parts; ++p) {
          specs[p]->write(digests[p], oracle_state(*specs[p]).second);
          oracle_written(*specs[p], agent_of_device(devs[p]));
        }
        std::vector<LaunchArg> args;
        for (std::size_t b : base.buffers) args.push_back(LaunchArg::of_buffer(ids[b], {}, {}));
        (void)rt.launch_partitioned(args, partitions);
        ++result.launches;
        ++result.partitioned_launches;
      } else {  // single-device launch: a recurring one or a fresh random one
        std::string name;
        std::size_t device;
        auto spec = std::make_shared<KernelSpec>();
        if (gen.chance(60)) {
          const Template& t = templates[gen.below(templates.size())];
          name = t.kernel;
          device = t.device;
          *spec = t.spec;
          spec->salt = gen.next();
        } else {
          name = "k" + std::to_string(gen.below(3));
          device = gen.below(opt.devices);
          *spec = random_spec(1, 0, false);
        }
        const Agent agent = agent_of_device(device);
        oracle_acquire(*spec, agent);
        auto [in, out] = oracle_state(*spec);
        spec->write(spec->digest(in), out);
        oracle_written(*spec, agent);
        Launch l;
        l.device = device;
        l.kernel = make_kernel(name, spec);
        l.args = args_of(*spec);
        l.args.push_back(LaunchArg::of_scalar(spec->salt));  // exercises scalar arguments too
        (void)rt.launch(l);
        ++result.launches;
      }
    }
    rt.finish();
    for (PendingRead& pr : reads) {
      pr.done.wait();
      for (std::size_t i = 0; i < pr.got.size(); ++i) {
        if (pr.got[i] != pr.expected[i]) ++result.mismatched_bytes;
      }
    }
    // Final contents, read back through the runtime (these reads count as copies too).
    for (std::size_t b = 0; b < opt.buffers; ++b) {
      oracle.host_read(b, Interval{0, sizes[b]});
      std::vector<std::byte> got(sizes[b]);
      rt.read_blocking(ids[b], 0, got);
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] != oracle.memory(b)[i]) ++result.mismatched_bytes;
      }
    }
    const TransferStats s = rt.stats();
    result.bytes_copied = s.total_bytes();
    result.copies = s.total_copies();
    result.replays = s.replays;
    result.mispredictions = s.mispredictions;
    result.prefetch_bytes = s.prefetch_bytes;
    result.prefetch_unread_bytes = s.prefetch_unread_bytes;
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  result.minimum_bytes = oracle.minimum();
  // Lazy copies exactly the minimum. Adaptive, with peer copies, copies the minimum plus the
  // replayed bytes no reader used (a replay that was read replaced the demand copy byte for byte).
  const bool lazy_exact =
      opt.strategy != UpdateStrategy::lazy || result.bytes_copied == result.minimum_bytes;
  const bool adaptive_exact =
      opt.strategy != UpdateStrategy::adaptive || !opt.peer_copies ||
      result.bytes_copied == result.minimum_bytes + result.prefetch_unread_bytes;
  result.ok = result.error.empty() && result.mismatched_bytes == 0 && lazy_exact && adaptive_exact;
  return result;
}

}  // namespace unimem

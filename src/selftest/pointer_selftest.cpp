#include "selftest/pointer_selftest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unimem/unimem.h>
#include <nlohmann/json.hpp>
#include <unimem/errors.hpp>
#include "selftest/flat_memory.hpp"

namespace unimem {

namespace {

// Kernels on 32-bit words with a CPU twin each (apply_kernel), so the flat memory computes
// exactly what the devices do. Unsigned arithmetic wraps the same way on both.
const char* const kKernels = R"CLC(
__kernel void affine(__global uint* a, uint mul, uint add) {
  const size_t i = get_global_id(0);
  a[i] = a[i] * mul + add;
}
__kernel void xor_index(__global const uint* src, __global uint* dst, uint salt) {
  const size_t i = get_global_id(0);
  dst[i] = src[i] ^ ((uint)i * salt);
}
__kernel void pair_sum(__global const uint* src, __global uint* dst) {
  const size_t i = get_global_id(0);
  dst[i] = src[i] + src[i + 1];
}
)CLC";

std::uint32_t load32(const std::byte* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}
void store32(std::byte* p, std::uint32_t v) { std::memcpy(p, &v, 4); }

class Checker {
 public:
  explicit Checker(PointerSelftestResult& r) : result_(r) {}
  void at_op(std::size_t op, std::uint64_t kind) {
    op_ = op;
    kind_ = kind;
  }

  void expect_ok(um_error e, const char* what) {
    if (e == UM_SUCCESS) return;
    if (result_.error.empty()) {
      result_.error = std::string(what) + ": " + um_error_name(e) + ": " + um_last_error_text();
    }
  }
  // where: what was compared, for the first mismatch's description.
  void compare(const std::byte* got, const std::byte* want, std::size_t n,
               const std::string& where = {}) {
    ++result_.host_checks;
    for (std::size_t i = 0; i < n; ++i) {
      if (got[i] == want[i]) continue;
      if (result_.mismatched_bytes++ == 0) {
        result_.first_mismatch = "op " + std::to_string(op_) + " (kind " + std::to_string(kind_) +
                                 ") " + where + " byte " + std::to_string(i);
      }
    }
  }

 private:
  PointerSelftestResult& result_;
  std::size_t op_ = 0;
  std::uint64_t kind_ = 0;
};

}  // namespace

std::string PointerSelftestResult::to_json(const PointerSelftestOptions& o) const {
  nlohmann::ordered_json j;
  j["ok"] = ok;
  j["seed"] = o.seed;
  j["ops"] = o.ops;
  j["devices"] = o.devices;
  j["protocol"] = o.protocol;
  j["block_size"] = o.block_size;
  j["mismatched_bytes"] = mismatched_bytes;
  j["faults"] = faults;
  j["read_faults"] = read_faults;
  j["write_faults"] = write_faults;
  j["bytes_copied"] = bytes_copied;
  j["bytes_fetched"] = bytes_fetched;
  j["bytes_published"] = bytes_published;
  j["bytes_direct"] = bytes_direct;
  j["eager_blocks"] = eager_blocks;
  j["device_bytes"] = device_bytes;
  j["launches"] = launches;
  j["partitions"] = partitions;
  j["io_calls"] = io_calls;
  j["host_checks"] = host_checks;
  if (!first_mismatch.empty()) j["first_mismatch"] = first_mismatch;
  if (!error.empty()) j["error"] = error;
  return j.dump();
}

PointerSelftestResult run_pointer_selftest(const PointerSelftestOptions& o) {
  um_protocol protocol{};
  if (um_parse_protocol(o.protocol.c_str(), &protocol) != UM_SUCCESS) {
    throw PreconditionError(um_last_error_text());
  }
  if (o.allocations < 2) throw PreconditionError("--allocations must be at least 2");
  if (o.max_allocation_size < 64) throw PreconditionError("--max-size must be at least 64");
  if (o.devices < 1) throw PreconditionError("--devices must be at least 1");
  if (um_set_devices(o.devices) != UM_SUCCESS || um_set_block_size(o.block_size) != UM_SUCCESS) {
    throw PreconditionError(um_last_error_text());
  }
  um_set_protocol(protocol);

  PointerSelftestResult result;
  Checker check(result);
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };

  // Allocations: whole 32-bit words, at least 16 of them.
  std::vector<std::uint64_t> sizes;
  for (std::size_t i = 0; i < o.allocations; ++i) {
    sizes.push_back(uniform(16, o.max_allocation_size / 4) * 4);
  }
  selftest::FlatMemory flat(sizes, true);
  std::vector<std::byte*> mem;
  for (std::uint64_t s : sizes) {
    auto* p = static_cast<std::byte*>(um_alloc(s));
    if (p == nullptr) throw DeviceError(std::string("um_alloc: ") + um_last_error_text());
    mem.push_back(p);
  }
  um_program program = um_program_create(kKernels, "");
  if (program == nullptr) {
    // Read before um_free, which clears the thread's last error when it succeeds.
    const std::string error = std::string("um_program_create failed: ") +
                              um_error_name(um_last_error()) + ": " + um_last_error_text();
    for (std::byte* p : mem) um_free(p);
    throw DeviceError(error);
  }
  um_reset_stats();

  // A scratch file for the file I/O ops, unlinked as soon as it is open: nothing is left behind
  // whatever way the run ends.
  std::string path =
      (std::filesystem::temp_directory_path() / "unimem_selftest_pointer_XXXXXX").string();
  const int made = mkstemp(path.data());
  if (made < 0) throw PreconditionError("cannot create " + path + ": " + std::strerror(errno));
  close(made);
  FILE* file = std::fopen(path.c_str(), "w+b");
  // Its own descriptor for read / write / pread / pwrite: lseek on it leaves the FILE's offset
  // (and stdio's view of it) alone.
  const int fd = file == nullptr ? -1 : open(path.c_str(), O_RDWR);
  std::remove(path.c_str());
  if (file == nullptr || fd < 0) {
    if (file != nullptr) std::fclose(file);
    for (std::byte* p : mem) um_free(p);
    um_program_release(program);
    throw PreconditionError("cannot open " + path + ": " + std::strerror(errno));
  }

  // A random byte range [begin, begin + n) of allocation a (n >= 1, whole words when words).
  auto pick = [&](std::size_t a, bool words, std::uint64_t max_len) {
    const std::uint64_t size = sizes[a];
    const std::uint64_t unit = words ? 4 : 1;
    const std::uint64_t n = uniform(1, std::min(max_len, size) / unit) * unit;
    const std::uint64_t begin = uniform(0, (size - n) / unit) * unit;
    return std::pair<std::uint64_t, std::uint64_t>(begin, n);
  };
  auto random_bytes = [&](std::uint64_t n) {
    std::vector<std::byte> v(n);
    for (auto& b : v) b = static_cast<std::byte>(rng());
    return v;
  };

  // UNIMEM_SELFTEST_TRACE=1: one line per op on stderr (kind, allocation, mismatches so far).
  const bool trace = std::getenv("UNIMEM_SELFTEST_TRACE") != nullptr;
  for (std::size_t op = 0; op < o.ops && result.error.empty(); ++op) {
    const std::size_t a = uniform(0, o.allocations - 1);
    std::vector<std::byte>& f = flat.memory(a);
    const auto kind = uniform(0, 99);
    check.at_op(op, kind);
    if (trace) {
      std::fprintf(stderr, "op %zu kind %d allocation %zu (%llu bytes) mismatched %llu\n", op,
                   static_cast<int>(kind), a, static_cast<unsigned long long>(sizes[a]),
                   static_cast<unsigned long long>(result.mismatched_bytes));
    }
    if (kind < 12) {  // memcpy into the application view (faults)
      auto [b, n] = pick(a, false, 40000);
      const auto data = random_bytes(n);
      std::memcpy(mem[a] + b, data.data(), n);
      std::memcpy(f.data() + b, data.data(), n);
    } else if (kind < 22) {  // element stores and loads
      const std::size_t count = uniform(1, 64);
      for (std::size_t k = 0; k < count; ++k) {
        const std::uint64_t w = uniform(0, sizes[a] / 4 - 1) * 4;
        const auto v = static_cast<std::uint32_t>(rng());
        if (uniform(0, 1) == 0) {
          *reinterpret_cast<volatile std::uint32_t*>(mem[a] + w) = v;
          store32(f.data() + w, v);
        } else {
          const std::uint32_t got = *reinterpret_cast<volatile std::uint32_t*>(mem[a] + w);
          std::byte bytes[4];
          store32(bytes, got);
          check.compare(bytes, f.data() + w, 4);
        }
      }
    } else if (kind < 32) {  // memcpy out of the application view (faults)
      auto [b, n] = pick(a, false, 60000);
      std::vector<std::byte> out(n);
      std::memcpy(out.data(), mem[a] + b, n);
      check.compare(out.data(), f.data() + b, n);
    } else if (kind < 37) {  // two host threads store into one range at once
      auto [b, n] = pick(a, true, 80000);
      const std::uint64_t half = n / 8 * 4;
      const auto salt = static_cast<std::uint32_t>(rng());
      auto body = [&, b = b, salt](std::uint64_t from, std::uint64_t to) {
        for (std::uint64_t w = from; w < to; w += 4) {
          *reinterpret_cast<volatile std::uint32_t*>(mem[a] + b + w) =
              salt + static_cast<std::uint32_t>(w);
        }
      };
      std::thread t(body, 0, half);
      body(half, n);
      t.join();
      for (std::uint64_t w = 0; w < n; w += 4) {
        store32(f.data() + b + w, salt + static_cast<std::uint32_t>(w));
      }
    } else if (kind < 45) {  // um_memcpy: host -> shared, shared -> host, shared -> shared
      const auto dir = uniform(0, 2);
      if (dir == 0) {
        auto [b, n] = pick(a, false, 100000);
        const auto data = random_bytes(n);
        check.expect_ok(um_memcpy(mem[a] + b, data.data(), n), "um_memcpy to shared");
        std::memcpy(f.data() + b, data.data(), n);
      } else if (dir == 1) {
        auto [b, n] = pick(a, false, 100000);
        std::vector<std::byte> out(n);
        check.expect_ok(um_memcpy(out.data(), mem[a] + b, n), "um_memcpy from shared");
        check.compare(out.data(), f.data() + b, n);
      } else {
        const std::size_t a2 = (a + 1 + uniform(0, o.allocations - 2)) % o.allocations;
        auto [b, n] = pick(a, false, 100000);
        const std::uint64_t n2 = std::min<std::uint64_t>(n, sizes[a2]);
        const std::uint64_t b2 = uniform(0, sizes[a2] - n2);
        check.expect_ok(um_memcpy(mem[a2] + b2, mem[a] + b, n2), "um_memcpy shared to shared");
        std::memcpy(flat.memory(a2).data() + b2, f.data() + b, n2);
      }
    } else if (kind < 49) {  // um_memset
      auto [b, n] = pick(a, false, 100000);
      const int v = static_cast<int>(uniform(0, 255));
      check.expect_ok(um_memset(mem[a] + b, v, n), "um_memset");
      std::memset(f.data() + b, v, n);
    } else if (kind < 59) {  // I/O into shared memory: read, pread, fread
      auto [b, n] = pick(a, false, 100000);
      const auto data = random_bytes(n);
      const std::uint64_t at = uniform(0, 4096);
      if (pwrite(fd, data.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
        result.error = "pwrite to the scratch file failed";
        break;
      }
      const auto how = uniform(0, 2);
      bool done = false;
      if (how == 0) {
        done = lseek(fd, static_cast<off_t>(at), SEEK_SET) >= 0 &&
               um_read(fd, mem[a] + b, n) == static_cast<ssize_t>(n);
      } else if (how == 1) {
        done = um_pread(fd, mem[a] + b, n, static_cast<off_t>(at)) == static_cast<ssize_t>(n);
      } else {
        // fflush drops what stdio buffered before the pwrite above changed the file (glibc's
        // fseek keeps a read buffer that covers the new position).
        done = std::fflush(file) == 0 && std::fseek(file, static_cast<long>(at), SEEK_SET) == 0 &&
               um_fread(mem[a] + b, 1, n, file) == n;
      }
      ++result.io_calls;
      if (!done) {
        result.error = std::string("I/O into shared memory failed: ") + std::strerror(errno);
        break;
      }
      std::memcpy(f.data() + b, data.data(), n);
    } else if (kind < 67) {  // I/O out of shared memory: write, pwrite, fwrite
      auto [b, n] = pick(a, false, 100000);
      const auto how = uniform(0, 2);
      bool done = false;
      if (how == 0) {
        done =
            lseek(fd, 0, SEEK_SET) == 0 && um_write(fd, mem[a] + b, n) == static_cast<ssize_t>(n);
      } else if (how == 1) {
        done = um_pwrite(fd, mem[a] + b, n, 0) == static_cast<ssize_t>(n);
      } else {
        done = std::fseek(file, 0, SEEK_SET) == 0 && um_fwrite(mem[a] + b, 1, n, file) == n &&
               std::fflush(file) == 0;
      }
      ++result.io_calls;
      std::vector<std::byte> back(n);
      if (!done || pread(fd, back.data(), n, 0) != static_cast<ssize_t>(n)) {
        result.error = std::string("I/O out of shared memory failed: ") + std::strerror(errno);
        break;
      }
      check.compare(back.data(), f.data() + b, n);
    } else if (kind < 95) {  // a launch over the devices, whole or interior pointers
      const auto which = uniform(0, 2);
      ++result.launches;
      if (which == 0) {  // affine on words [b, b + n) of a
        auto [b, n] = pick(a, true, sizes[a]);
        const auto mul = static_cast<std::uint32_t>(rng() | 1);
        const auto add = static_cast<std::uint32_t>(rng());
        um_arg args[] = {um_arg_pointer(mem[a] + b), um_arg_value(&mul, 4), um_arg_value(&add, 4)};
        const um_range r = um_range_1d(n / 4, 0);
        check.expect_ok(um_launch(program, "affine", &r, args, 3), "um_launch affine");
        for (std::uint64_t w = b; w < b + n; w += 4)
          store32(f.data() + w, load32(f.data() + w) * mul + add);
      } else {  // xor_index or pair_sum from a into another allocation
        const std::size_t d = (a + 1 + uniform(0, o.allocations - 2)) % o.allocations;
        const bool pair = which == 2;
        const std::uint64_t extra = pair ? 4 : 0;
        const std::uint64_t max_words = (std::min(sizes[a] - extra, sizes[d])) / 4;
        if (max_words == 0) continue;
        const std::uint64_t words = uniform(1, max_words);
        const std::uint64_t sb = uniform(0, (sizes[a] - extra) / 4 - words) * 4;
        const std::uint64_t db = uniform(0, sizes[d] / 4 - words) * 4;
        const auto salt = static_cast<std::uint32_t>(rng());
        const um_range r = um_range_1d(words, 0);
        std::vector<std::byte>& g = flat.memory(d);
        if (pair) {
          um_arg args[] = {um_arg_pointer(mem[a] + sb), um_arg_pointer(mem[d] + db)};
          check.expect_ok(um_launch(program, "pair_sum", &r, args, 2), "um_launch pair_sum");
          for (std::uint64_t i = 0; i < words; ++i) {
            store32(g.data() + db + 4 * i,
                    load32(f.data() + sb + 4 * i) + load32(f.data() + sb + 4 * i + 4));
          }
        } else {
          um_arg args[] = {um_arg_pointer(mem[a] + sb), um_arg_pointer(mem[d] + db),
                           um_arg_value(&salt, 4)};
          check.expect_ok(um_launch(program, "xor_index", &r, args, 3), "um_launch xor_index");
          for (std::uint64_t i = 0; i < words; ++i) {
            store32(g.data() + db + 4 * i,
                    load32(f.data() + sb + 4 * i) ^ (static_cast<std::uint32_t>(i) * salt));
          }
        }
      }
    } else {
      check.expect_ok(um_sync(), "um_sync");
    }
  }
  check.expect_ok(um_sync(), "um_sync");
  for (std::size_t a = 0; a < o.allocations; ++a) {
    const std::uint64_t before = result.mismatched_bytes;
    check.compare(mem[a], flat.memory(a).data(), sizes[a],  // through the pointer: faults
                  "final contents of allocation " + std::to_string(a));
    if (trace && result.mismatched_bytes != before) {
      std::uint64_t first = 0;
      std::uint64_t last = 0;
      bool any = false;
      for (std::uint64_t i = 0; i < sizes[a]; ++i) {
        if (mem[a][i] == flat.memory(a)[i]) continue;
        if (!any) first = i;
        last = i;
        any = true;
      }
      std::fprintf(stderr, "allocation %zu (%llu bytes): mismatches in [%llu, %llu]\n", a,
                   static_cast<unsigned long long>(sizes[a]),
                   static_cast<unsigned long long>(first), static_cast<unsigned long long>(last));
    }
  }
  um_stats s{};
  check.expect_ok(um_get_stats(&s), "um_get_stats");
  for (std::byte* p : mem) check.expect_ok(um_free(p), "um_free");
  check.expect_ok(um_program_release(program), "um_program_release");
  std::fclose(file);
  close(fd);
  result.faults = s.faults;
  result.read_faults = s.read_faults;
  result.write_faults = s.write_faults;
  result.bytes_fetched = s.bytes_fetched;
  result.bytes_published = s.bytes_published;
  result.bytes_direct = s.bytes_direct;
  result.bytes_copied = s.bytes_fetched + s.bytes_published + s.bytes_direct;
  result.eager_blocks = s.eager_blocks;
  result.device_bytes = s.device_bytes;
  result.partitions = s.partitions;
  result.ok = result.mismatched_bytes == 0 && result.error.empty();
  return result;
}

}  // namespace unimem

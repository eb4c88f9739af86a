#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "memory/allocation_cache.hpp"
#include "memory/device_memory.hpp"
#include "region/interval.hpp"
#include "region/interval_set.hpp"

namespace unimem {

namespace detail {
struct ResidencyTestAccess;  // defined by the tests that break a Residency on purpose
}  // namespace detail

/// The buffer bytes a device allocation is to hold: a run of bytes (pitch == 0), or a packed
/// 2-D box: `rows` rows of `width` bytes at a pitch of `pitch` bytes, the first row starting at
/// buffer byte bytes.begin (bytes is the rectangle's bounding interval, and
/// bytes.begin % pitch + width <= pitch). A packed box's allocation holds only the rows, one
/// after another (issue 10: a tile of columns of a matrix, whose bounding interval is nearly the
/// whole matrix). Converts from an Interval (a run of bytes).
struct ResidentBox {
  Interval bytes;
  std::uint64_t pitch = 0;
  std::uint64_t width = 0;

  ResidentBox() = default;
  ResidentBox(Interval run) : bytes(run) {}  // NOLINT(google-explicit-constructor): a run
  /// rows rows of width bytes at pitch, the first at byte first.
  static ResidentBox packed(std::uint64_t first, std::uint64_t pitch, std::uint64_t width,
                            std::uint64_t rows);
  [[nodiscard]] bool is_packed() const { return pitch != 0; }
  [[nodiscard]] std::uint64_t rows() const {
    return is_packed() ? (bytes.size() + pitch - width) / pitch : 1;
  }
  /// Bytes the allocation needs: rows * width when packed.
  [[nodiscard]] std::uint64_t size() const { return is_packed() ? rows() * width : bytes.size(); }
  /// The bytes held: the rows, or the run.
  [[nodiscard]] IntervalSet held_bytes() const;
  friend bool operator==(const ResidentBox&, const ResidentBox&) = default;
};

/// Where a run's allocation may start: a multiple of this many buffer bytes (RuntimeCore's
/// choose_boxes cuts boxes there, and Residency's growth keeps to it), so a kernel's rebased
/// pointer into it is as aligned as in a full mirror, modulo 128 bytes (OpenCL's usual
/// CL_DEVICE_MEM_BASE_ADDR_ALIGN): a vector load through a view inside the box stays aligned.
inline constexpr std::uint64_t kBoxAlignment = 128;

/// A device allocation that holds the bytes [base, base + allocation.size) of a buffer: buffer
/// byte b lies at offset b - base of the allocation. Packed (pitch != 0: ResidentBox): it holds
/// allocation.size / width rows of width bytes at pitch, the first at buffer byte base; buffer
/// byte b = r * pitch + c lies at offset (r - base / pitch) * width + (c - base % pitch).
struct ResidentAllocation {
  DeviceAllocation allocation;
  std::uint64_t base = 0;
  std::uint64_t pitch = 0;
  std::uint64_t width = 0;

  [[nodiscard]] bool is_packed() const { return pitch != 0; }
  /// The buffer bytes the allocation holds, as a box (packed) or a run.
  [[nodiscard]] ResidentBox box() const;
  /// The bounding interval of the buffer bytes the allocation holds (all of them when not
  /// packed).
  [[nodiscard]] Interval covers() const { return box().bytes; }
  /// Whether the allocation holds every byte of bytes (a packed one: bytes lie in one row).
  [[nodiscard]] bool holds(const Interval& bytes) const {
    if (!is_packed()) return base <= bytes.begin && bytes.end <= base + allocation.size;
    return holds_in_rows(bytes);
  }
  /// Whether it holds every byte of box. (Inline for runs: every launch asks it per use.)
  [[nodiscard]] bool holds(const ResidentBox& box) const {
    if (!box.is_packed() || !is_packed()) return holds(box.bytes);  // a run holds the bounds
    return holds_packed_box(box);
  }
  /// The allocation offset of buffer byte buffer_offset, which must be held (or lie at the end
  /// of the run, for a run of bytes).
  [[nodiscard]] std::uint64_t offset_of(std::uint64_t buffer_offset) const;
  friend bool operator==(const ResidentAllocation&, const ResidentAllocation&) = default;

 private:
  [[nodiscard]] bool holds_in_rows(const Interval& bytes) const;
  [[nodiscard]] bool holds_packed_box(const ResidentBox& box) const;
};

/// Whether the bytes of a and b overlap or touch (a byte of one next to a byte of the other).
[[nodiscard]] bool boxes_meet(const ResidentBox& a, const ResidentBox& b);

/// What a Residency's owner (the SharedBuffer, one layer up) does when one of its allocations is
/// evicted or merged into a larger one: which bytes are worth keeping is decided by the coherence
/// directory, which this layer may not see (cmake/layers.cmake: memory uses device only).
/// busy_on and box_out are called under DeviceMemory's lock and must not call back into it (no
/// allocation, no use counts); relocate is called outside it.
class EvictionClient {
 public:
  virtual ~EvictionClient() = default;
  /// Whether operations issued on the owner's allocations on device are still running.
  [[nodiscard]] virtual bool busy_on(std::size_t device) const = 0;
  /// Whether operations issued on the owner's allocation holding `bytes` on device are still
  /// running (those on its other allocations there do not count). The default asks busy_on.
  [[nodiscard]] virtual bool busy_on(std::size_t device, const Interval& bytes) const {
    (void)bytes;
    return busy_on(device);
  }
  /// Box-out (BBMM Algorithm 4): the allocation on device that holds the buffer bytes `bytes` is
  /// about to be freed. Write home the bytes it alone holds, stop counting it as a holder of any
  /// of them, and wait until no issued operation uses it any more. May throw; then it stays.
  virtual void box_out(std::size_t device, const Interval& bytes) = 0;
  /// The same for a packed box (ResidentBox), whose bytes are `rows`: only they are held. The
  /// default boxes out their bounding interval (coherent, if wasteful: bytes there that other
  /// allocations hold are written home and dropped too).
  virtual void box_out_rows(std::size_t device, const IntervalSet& rows) {
    box_out(device, rows.bounds());
  }
  /// busy_on for a packed box's rows; the default asks about their bounding interval.
  [[nodiscard]] virtual bool busy_on_rows(std::size_t device, const IntervalSet& rows) const {
    return busy_on(device, rows.bounds());
  }
  /// BBMM Algorithm 2 (bb_present / bb_readin): `from` is merged into the larger allocation `to`
  /// on the same device (to.covers() contains from.covers()). Issue device-local copies of the
  /// bytes current in `from` to the same buffer bytes of `to`, each after the issued operations
  /// that write those bytes, and order later operations on them after the copies; do not wait
  /// for anything. Returns every event that may still use `from`: the operations issued on it so
  /// far and the copies. The Residency frees `from` only once they have all completed (it
  /// retires it: see Residency), so the host never stalls on a merge. The default keeps nothing
  /// and returns nothing (no directory: the contents of a fresh allocation are unspecified
  /// anyway, and nothing is known to use `from`).
  virtual EventList relocate(std::size_t device, const ResidentAllocation& from,
                             const ResidentAllocation& to) {
    (void)device;
    (void)from;
    (void)to;
    return {};
  }
  /// The owner, for error messages ("buffer 'a' (#1, 64 bytes)").
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// Where the bytes of one shared buffer live on each device: per device, disjoint allocations
/// ("boxes", BBMM seed 001_9219257c3045faa0.txt sections 4-6) that each hold a run of the buffer's
/// bytes, made on first use from an AllocationCache and handed back to it when released.
///
/// Partial residency (BBMM Algorithm 2): a device holds only the bytes its work uses. ensure()
/// answers "which allocation on device d holds these bytes, and at what offset"; when none does,
/// the new box is the bounding box of the bytes and of every allocation they intersect or touch,
/// and those allocations are merged into it: their current bytes move with device-local copies
/// (EvictionClient::relocate: bb_present / bb_readin) instead of being fetched again, and they
/// are freed. So a device's allocations never overlap or touch: a run of bytes current on a
/// device always lies in one allocation. A box of [0, size) is the buffer's full mirror.
///
/// A merge never waits: a merged allocation that operations may still use (kernels issued on
/// it, the copies moving its bytes) retires instead of being freed. It holds no bytes any more
/// (find, covers and allocations never name it) but stays allocated, and counted by DeviceMemory,
/// until the events relocate returned have completed: reap() frees those that have, and runs at
/// every ensure() that allocates; release() waits for them; DeviceMemory reclaims them (reclaim())
/// before it evicts anything. A buffer's retiring boxes on a device never hold more bytes than its
/// live ones there (limit_retiring waits for the oldest). A device whose boxes of this buffer keep
/// growing (a third merge and later: floyd-warshall's pivot row walks past the device's rows one
/// launch at a time) gets room to grow: the merged box extends by half its span in the direction it
/// grew, when that fits without evicting anything, so a box that grows row by row is merged O(log
/// n) times, not n times.
///
/// Packed 2-D boxes (ResidentBox::packed, issue 10): an out-of-core chunk that uses a tile of
/// columns of a matrix gets an allocation holding only the tile's rows, packed at their width
/// (the kernel is rewritten to index it: api/kernel_pitch_rewrite.hpp). Its bounding interval may
/// overlap other allocations' (the next tile's rows interleave with its own); what stays true is
/// that the bytes held by a device's allocations never overlap or touch, so a run of bytes
/// current on a device still lies in one allocation (in one row of a packed one). Packed boxes
/// are never merged: a box that meets one boxes it out (its bytes go home if only it held them).
///
/// Two ways to get device memory: straight from an AllocationCache (no limit, no eviction), or
/// through a runtime's DeviceMemory, which accounts every allocation against the device's limit,
/// keeps the use counts and LRU lists, and may evict an allocation of this Residency to make room
/// for another (asking the EvictionClient to box it out first).
///
/// Not thread-safe: its owner serialises calls (DeviceMemory changes the allocations only under
/// its own lock, from allocate / release / eviction). The cache, the DeviceMemory, the client and
/// the devices must outlive it.
class Residency {
 public:
  /// What ensure() does with the device's allocations that the new bytes intersect or touch.
  enum class Placement {
    /// BBMM Algorithm 2: merge them into their bounding box (their bytes move device-locally).
    merge,
    /// Box them out (DeviceMemory eviction: their Modified bytes go home first) and allocate
    /// only the bytes asked for. An out-of-core launch's chunks walk through buffers that do not
    /// fit: the next chunk's box overlaps the last one's (a stencil's halo rows) or touches it,
    /// and merging would grow the box back towards the whole buffer (and wait for the last
    /// chunk's kernel to move its bytes).
    replace,
  };
  /// A buffer of buffer_size bytes on device_count devices, holding no allocation yet; memory
  /// comes from the cache, without a limit.
  Residency(std::uint64_t buffer_size, std::size_t device_count, AllocationCache& allocations);
  /// The same, with memory from `memory` (under its limits, evictable; `client` boxes out).
  Residency(std::uint64_t buffer_size, std::size_t device_count, AllocationCache& allocations,
            DeviceMemory& memory, EvictionClient& client);
  /// Releases every allocation (no operation may still use them).
  ~Residency();
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;

  [[nodiscard]] std::uint64_t buffer_size() const { return size_; }
  [[nodiscard]] std::size_t device_count() const { return held_.size(); }

  /// The allocation on device that holds all of bytes (non-empty), or nullopt if none does.
  [[nodiscard]] std::optional<ResidentAllocation> find(std::size_t device,
                                                       const ResidentBox& bytes) const;
  /// Whether device holds an allocation covering bytes (allocations never touch, so bytes held
  /// by the device's allocations together are held by one of them).
  [[nodiscard]] bool covers(std::size_t device, const ResidentBox& bytes) const {
    return device < held_.size() && index_of(device, bytes) != kNone;
  }
  /// How many times an allocation was added to or left the held ones (allocated, adopted,
  /// freed, evicted, merged away): an allocation found holding some bytes still holds them
  /// while this count is unchanged (a held allocation never changes in place).
  [[nodiscard]] std::uint64_t changes() const { return changes_; }
  /// The device's allocations, lowest bytes first.
  [[nodiscard]] std::vector<ResidentAllocation> allocations(std::size_t device) const;
  /// The same into `out` (its storage reused).
  void allocations_into(std::size_t device, std::vector<ResidentAllocation>& out) const;
  /// Whether the device's allocations are exactly `allocations` (as allocations() lists them).
  [[nodiscard]] bool holds_exactly(std::size_t device,
                                   std::span<const ResidentAllocation> allocations) const;
  /// An allocation on device that holds bytes (non-empty), now the most recently used: found, or
  /// made for the bounding box of bytes and of the allocations they intersect or touch, which are
  /// merged into it (see the class comment; fresh or recycled memory: bytes no merged allocation
  /// held are unspecified until a copy or a kernel writes them). Throws DeviceError
  /// (OutOfDeviceMemory under a DeviceMemory) if the device cannot allocate it, even after
  /// eviction, and PreconditionError if a merged allocation is in use. With Placement::replace
  /// the allocations the bytes intersect or touch are boxed out instead of merged, and the new
  /// one holds exactly the bytes; an allocation that holds the bytes is kept only if it holds
  /// exactly them. A packed box (ResidentBox::is_packed) is always placed as with replace: the
  /// allocations whose bytes it meets are boxed out, never merged.
  ResidentAllocation ensure(std::size_t device, const ResidentBox& bytes,
                            Placement placement = Placement::merge);
  /// The full mirror: ensure(device, [0, buffer_size)).
  ResidentAllocation ensure_whole(std::size_t device) { return ensure(device, Interval{0, size_}); }
  /// ensure(device, bytes), and the allocation is in use (not evictable, not merged) until the
  /// matching end_use(device, bytes). Uses nest. Without a DeviceMemory only the allocation is
  /// made.
  ResidentAllocation begin_use(std::size_t device, const ResidentBox& bytes,
                               Placement placement = Placement::merge);
  /// Whether begin_use(device, bytes) (Placement::merge) would only mark the allocation holding
  /// bytes in use: one DeviceMemory::use, nothing allocated, merged, touched or evicted.
  [[nodiscard]] bool held_for_use(std::size_t device, const ResidentBox& bytes) const;
  ResidentAllocation begin_use(std::size_t device) { return begin_use(device, Interval{0, size_}); }
  void end_use(std::size_t device, const ResidentBox& bytes);
  void end_use(std::size_t device) { end_use(device, Interval{0, size_}); }
  /// Every allocation stays in use until released (the buffer is being destroyed: its pending
  /// operations may still run, so nothing may evict it meanwhile).
  void retire();
  /// Bytes of the allocations holding this buffer's bytes on device (0 before its first use);
  /// retiring allocations are not counted (retiring_bytes).
  [[nodiscard]] std::uint64_t allocated_bytes(std::size_t device) const;
  /// Bytes of the allocations merged away on device whose users have not all finished yet.
  [[nodiscard]] std::uint64_t retiring_bytes(std::size_t device) const;
  /// Frees the retiring allocations whose users have all finished; waits for nothing.
  void reap();

  /// Hands device's allocations back to the cache; no pending operation may still use them.
  /// Retiring allocations are freed too, after waiting for their users.
  /// A driver that fails to free them leaks them (nothing else can be done).
  void release(std::size_t device);
  /// release() on every device.
  void release_all();

  /// Throws InvariantError unless every allocation is valid, lies on a known device inside the
  /// buffer, the allocations of a device are sorted and neither overlap nor touch, and (under a
  /// DeviceMemory) each is registered there; retiring allocations must be valid and registered.
  void check_invariants() const;

 private:
  friend struct detail::ResidencyTestAccess;
  friend class DeviceMemory;  // calls the hooks below under its lock
  struct Held {
    ResidentAllocation where;
    DeviceMemory::EntryId id = 0;  // under memory_: its DeviceMemory entry
  };
  /// A merged allocation freed once `users` (relocate's events) have completed.
  struct Retiring {
    std::size_t device = 0;
    Held held;
    EventList users;  // completed ones are dropped as reap() sees them
  };
  void check_if_enabled() const;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  /// The index in held_[device] of the allocation holding bytes, or kNone.
  [[nodiscard]] std::size_t index_of(std::size_t device, const ResidentBox& bytes) const {
    const std::vector<Held>& list = held_[device];
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i].where.holds(bytes)) return i;
    }
    return kNone;
  }
  // begin_use's fast case: the index of the held allocation it only marks in use, else kNone.
  [[nodiscard]] std::size_t fast_use_index(std::size_t device, const ResidentBox& bytes,
                                           Placement placement) const;
  /// A new allocation for the buffer bytes box (inserted in held_ by adopt / here).
  Held allocate(std::size_t device, const ResidentBox& box);
  /// Box-out of one allocation (through DeviceMemory: a counted eviction), then freed.
  void box_out_held(std::size_t device, const Held& h);
  /// Frees one allocation (to the cache, or through DeviceMemory) and forgets it.
  void free_held(std::size_t device, const Held& h);
  /// The merged allocation h (still in held_) leaves held_; freed now if none of users is still
  /// running, else retired until they are.
  void retire_held(std::size_t device, const Held& h, EventList users);
  /// Frees retiring_[i] (its users finished) and removes it.
  void free_retiring(std::size_t i);
  /// Keeps the retiring bytes on device at most the bytes of the live boxes there, waiting for
  /// the oldest retiring boxes' users: a box that grows again and again while the host submits far
  /// ahead (floyd-warshall's pivot row) would otherwise keep every old box until the devices
  /// catch up. Waiting for the box retired before the last merge rarely stalls.
  void limit_retiring(std::size_t device);
  // DeviceMemory's hooks.
  void adopt(std::size_t device, std::uint64_t base, DeviceAllocation allocation,
             DeviceMemory::EntryId id);
  DeviceAllocation forget(std::size_t device, DeviceMemory::EntryId id);
  DeviceAllocation evict(std::size_t device, DeviceMemory::EntryId id);  // box-out, then forget
  // A retiring allocation whose users have finished (all of them, after waiting for them when
  // `wait`), forgotten; nullopt if some still run and !wait. DeviceMemory frees it.
  std::optional<DeviceAllocation> reclaim(std::size_t device, DeviceMemory::EntryId id, bool wait);
  [[nodiscard]] bool busy_on(std::size_t device, DeviceMemory::EntryId id) const;
  [[nodiscard]] bool holds(std::size_t device, const DeviceAllocation& allocation) const;
  [[nodiscard]] std::string describe() const;

  std::uint64_t size_;
  std::uint64_t changes_ = 0;  // changes()
  AllocationCache& allocations_;
  DeviceMemory* memory_ = nullptr;       // null: allocations straight from the cache
  EvictionClient* client_ = nullptr;     // set with memory_
  std::vector<std::vector<Held>> held_;  // per device, sorted by base
  std::vector<Retiring> retiring_;       // oldest first
  std::vector<std::uint32_t> growths_;   // per device: merges so far (see ensure)
  bool retired_ = false;
  ResidentBox allocating_;  // the box allocate() is getting memory for (adopt() files it)
};

}  // namespace unimem

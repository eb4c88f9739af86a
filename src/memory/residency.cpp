#include "memory/residency.hpp"

#include <algorithm>
#include <string>

#include "common/check.hpp"

namespace unimem {

ResidentBox ResidentBox::packed(std::uint64_t first, std::uint64_t pitch, std::uint64_t width,
                                std::uint64_t rows) {
  UNIMEM_REQUIRE(pitch > 0 && width > 0 && rows > 0 && first % pitch + width <= pitch,
                 "ResidentBox::packed: rows must be non-empty and lie within their pitch");
  ResidentBox b;
  b.bytes = Interval{first, first + (rows - 1) * pitch + width};
  b.pitch = pitch;
  b.width = width;
  return b;
}

IntervalSet ResidentBox::held_bytes() const {
  if (!is_packed() || width == pitch) return IntervalSet(bytes);
  std::vector<Interval> rows_held;
  const std::uint64_t n = rows();
  rows_held.reserve(n);
  for (std::uint64_t r = 0; r < n; ++r) {
    rows_held.push_back(Interval{bytes.begin + r * pitch, bytes.begin + r * pitch + width});
  }
  return IntervalSet::from_normalized(std::move(rows_held));
}

ResidentBox ResidentAllocation::box() const {
  if (!is_packed()) return ResidentBox(Interval{base, base + allocation.size});
  return ResidentBox::packed(base, pitch, width, allocation.size / width);
}

bool ResidentAllocation::holds_in_rows(const Interval& bytes) const {
  if (bytes.empty() || bytes.begin < base) return false;
  const std::uint64_t row = bytes.begin / pitch;
  const std::uint64_t first_row = base / pitch;
  const std::uint64_t col0 = base % pitch;
  if (row < first_row || row - first_row >= allocation.size / width) return false;
  const std::uint64_t col = bytes.begin % pitch;
  return col >= col0 && bytes.end - row * pitch <= col0 + width;
}

bool ResidentAllocation::holds_packed_box(const ResidentBox& b) const {
  if (b.pitch != pitch) return false;
  // The same pitch: its first and last rows held means every row between is.
  const Interval first{b.bytes.begin, b.bytes.begin + b.width};
  const Interval last{b.bytes.end - b.width, b.bytes.end};
  return holds(first) && holds(last);
}

std::uint64_t ResidentAllocation::offset_of(std::uint64_t buffer_offset) const {
  if (!is_packed()) {
    UNIMEM_REQUIRE(buffer_offset >= base && buffer_offset - base <= allocation.size,
                   "ResidentAllocation::offset_of: byte outside the allocation");
    return buffer_offset - base;
  }
  UNIMEM_REQUIRE(holds(Interval{buffer_offset, buffer_offset + 1}),
                 "ResidentAllocation::offset_of: byte outside the packed allocation's rows");
  return (buffer_offset / pitch - base / pitch) * width + (buffer_offset % pitch - base % pitch);
}

bool boxes_meet(const ResidentBox& a, const ResidentBox& b) {
  if (a.bytes.end < b.bytes.begin || b.bytes.end < a.bytes.begin) return false;
  if (!a.is_packed() && !b.is_packed()) return true;
  // Widen one side's runs by a byte each way: they meet the other's when the bytes touch.
  std::vector<Interval> widened;
  for (const Interval& r : a.held_bytes()) {
    widened.push_back(Interval{r.begin == 0 ? 0 : r.begin - 1, r.end + 1});
  }
  return IntervalSet::from_unsorted(std::move(widened)).intersects(b.held_bytes());
}

Residency::Residency(std::uint64_t buffer_size, std::size_t device_count,
                     AllocationCache& allocations)
    : size_(buffer_size),
      allocations_(allocations),
      held_(device_count),
      growths_(device_count, 0) {}

Residency::Residency(std::uint64_t buffer_size, std::size_t device_count,
                     AllocationCache& allocations, DeviceMemory& memory, EvictionClient& client)
    : size_(buffer_size),
      allocations_(allocations),
      memory_(&memory),
      client_(&client),
      held_(device_count),
      growths_(device_count, 0) {
  UNIMEM_REQUIRE(memory.device_count() == device_count,
                 "Residency: the DeviceMemory has another number of devices");
}

Residency::~Residency() { release_all(); }

std::optional<ResidentAllocation> Residency::find(std::size_t device,
                                                  const ResidentBox& bytes) const {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::find: unknown device");
  UNIMEM_REQUIRE(bytes.bytes.end <= size_, "Residency::find: bytes reach beyond the buffer");
  const std::size_t i = index_of(device, bytes);
  if (i == kNone) return std::nullopt;
  return held_[device][i].where;
}

std::vector<ResidentAllocation> Residency::allocations(std::size_t device) const {
  std::vector<ResidentAllocation> out;
  allocations_into(device, out);
  return out;
}

void Residency::allocations_into(std::size_t device, std::vector<ResidentAllocation>& out) const {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::allocations: unknown device");
  out.clear();
  for (const Held& h : held_[device]) out.push_back(h.where);
}

bool Residency::holds_exactly(std::size_t device,
                              std::span<const ResidentAllocation> allocations) const {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::holds_exactly: unknown device");
  return std::equal(held_[device].begin(), held_[device].end(), allocations.begin(),
                    allocations.end(),
                    [](const Held& h, const ResidentAllocation& a) { return h.where == a; });
}

Residency::Held Residency::allocate(std::size_t device, const ResidentBox& box) {
  allocating_ = box;  // adopt() files the allocation with the box's shape
  const ResidentAllocation where{DeviceAllocation{}, box.bytes.begin, box.pitch, box.width};
  if (memory_ != nullptr) {
    const DeviceMemory::Grant g = memory_->allocate(device, box.size(), *this, box.bytes.begin);
    ResidentAllocation made = where;
    made.allocation = g.allocation;
    return Held{made, g.id};  // adopt() filed it
  }
  const DeviceAllocation a = allocations_.allocate(device, box.size());
  adopt(device, box.bytes.begin, a, 0);
  ResidentAllocation made = where;
  made.allocation = a;
  return Held{made, 0};
}

void Residency::free_held(std::size_t device, const Held& h) {
  if (memory_ != nullptr) {
    memory_->release(device, h.id);  // forget() drops it from held_
    return;
  }
  // Without a DeviceMemory every id is 0: find it by its allocation.
  std::erase_if(held_[device], [&h](const Held& x) { return x.where == h.where; });
  ++changes_;
  allocations_.release(device, h.where.allocation, h.where.allocation.size);
}

void Residency::retire_held(std::size_t device, const Held& h, EventList users) {
  std::erase_if(users, [](const Event& e) { return e.is_complete(); });  // null ones too
  if (users.empty()) {
    free_held(device, h);
    return;
  }
  std::erase_if(held_[device], [&h](const Held& x) { return x.where == h.where; });
  ++changes_;
  retiring_.push_back(Retiring{device, h, std::move(users)});
  if (memory_ != nullptr) memory_->retire(device, h.id);
  limit_retiring(device);
}

void Residency::limit_retiring(std::size_t device) {
  const std::uint64_t live = allocated_bytes(device);
  std::uint64_t retiring = retiring_bytes(device);
  for (std::size_t i = 0; i < retiring_.size() && retiring > live;) {
    if (retiring_[i].device != device) {
      ++i;
      continue;
    }
    retiring -= retiring_[i].held.where.allocation.size;
    try {
      wait_all(retiring_[i].users);
    } catch (...) {  // a failed operation has finished too; its own event reported the failure
    }
    free_retiring(i);
  }
}

void Residency::free_retiring(std::size_t i) {
  const Retiring r = retiring_[i];
  if (memory_ != nullptr) {
    memory_->release(r.device, r.held.id);  // forget() drops it from retiring_
    return;
  }
  retiring_.erase(retiring_.begin() + static_cast<std::ptrdiff_t>(i));
  allocations_.release(r.device, r.held.where.allocation, r.held.where.allocation.size);
}

void Residency::reap() {
  for (std::size_t i = 0; i < retiring_.size();) {
    // The merge's copies were issued last and usually finish last: one query while they run.
    EventList& users = retiring_[i].users;
    while (!users.empty() && users.back().is_complete()) users.pop_back();
    if (users.empty()) {
      free_retiring(i);
    } else {
      ++i;
    }
  }
}

ResidentAllocation Residency::ensure(std::size_t device, const ResidentBox& wanted,
                                     Placement placement) {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::ensure: unknown device");
  UNIMEM_REQUIRE(wanted.bytes.end <= size_, "Residency::ensure: bytes reach beyond the buffer");
  UNIMEM_REQUIRE(!wanted.bytes.empty(), "Residency::ensure: no bytes to hold");
  UNIMEM_REQUIRE(!retired_, "Residency::ensure: the buffer is being released");
  if (wanted.is_packed()) placement = Placement::replace;  // packed boxes never merge
  const Interval bytes = wanted.bytes;
  if (const std::size_t i = index_of(device, wanted); i != kNone) {
    // A chunk (replace) keeps only a box of exactly its bytes: a larger one (the whole buffer an
    // earlier launch read) would hold more than the chunk was sized for, and the chunk's other
    // boxes might not fit beside it. It is replaced like any box the bytes meet.
    if (placement == Placement::merge || held_[device][i].where.box() == wanted) {
      if (memory_ != nullptr) memory_->touch(device, held_[device][i].id);
      return held_[device][i].where;
    }
  }
  // Only when allocating: a query per retiring box on every lookup cost floyd-warshall's 1024
  // launches more than the boxes' memory is worth (finished ones are freed by the next
  // allocation on their device anyway).
  if (!retiring_.empty()) reap();
  // BBMM Algorithm 2: the new box is the bounding box of the bytes and of every allocation they
  // intersect or touch (allocations never touch each other, so one pass finds them all). Packed
  // allocations are not merged: those the box meets are boxed out (collected until the box
  // stops growing, as it may grow over one).
  Interval box = bytes;
  std::vector<Held> merged;
  std::vector<Held> displaced;  // packed allocations in the way, boxed out
  for (bool grew = true; grew;) {
    grew = false;
    for (const Held& h : held_[device]) {
      const auto same = [&h](const Held& x) { return x.where == h.where; };
      if (std::any_of(merged.begin(), merged.end(), same) ||
          std::any_of(displaced.begin(), displaced.end(), same)) {
        continue;
      }
      const ResidentBox around = wanted.is_packed() ? wanted : ResidentBox(box);
      if (!boxes_meet(h.where.box(), around)) continue;
      if (h.where.is_packed() || wanted.is_packed()) {
        displaced.push_back(h);
        continue;
      }
      merged.push_back(h);
      const Interval c = h.where.covers();
      const Interval grown{std::min(box.begin, c.begin), std::max(box.end, c.end)};
      grew = grew || grown != box;
      box = grown;
    }
  }
  for (const std::vector<Held>* list : {&merged, &displaced}) {
    for (const Held& h : *list) {
      if (memory_ != nullptr && memory_->uses(device, h.id) > 0) {
        throw PreconditionError(describe() + ": device " + std::to_string(device) + " cannot " +
                                (placement == Placement::merge ? "grow" : "replace") +
                                " its allocation of bytes " + h.where.covers().to_string() +
                                (placement == Placement::merge ? " to " + box.to_string()
                                                               : " by " + bytes.to_string()) +
                                " while an operation uses it");
      }
    }
  }
  for (const Held& h : displaced) box_out_held(device, h);
  if (placement == Placement::replace && !merged.empty()) {
    for (const Held& h : merged) box_out_held(device, h);
    merged.clear();
    box = bytes;
  }
  if (wanted.is_packed()) {
    const Held made = allocate(device, wanted);
    check_if_enabled();
    return made.where;
  }
  if (!merged.empty() && ++growths_[device] > 2) {
    // Repeated growth: room to grow further in the direction(s) this merge grew.
    Interval old_span = merged.front().where.covers();
    for (const Held& h : merged) {
      old_span = Interval{std::min(old_span.begin, h.where.covers().begin),
                          std::max(old_span.end, h.where.covers().end)};
    }
    const std::uint64_t slack = box.size() / 2;
    Interval roomy = box;
    if (box.begin < old_span.begin) roomy.begin = box.begin > slack ? box.begin - slack : 0;
    if (box.end > old_span.end) roomy.end = std::min(size_, box.end + slack);
    for (const Held& h : held_[device]) {  // short of the device's other boxes (never touching)
      const Interval c = h.where.covers();
      if (c.begin > box.end) roomy.end = std::min(roomy.end, c.begin - 1);
      if (c.end < box.begin) roomy.begin = std::max(roomy.begin, c.end + 1);
      // A packed box whose rows interleave with this one's span: no room to grow over it.
      if (h.where.is_packed() && c.begin <= box.end && box.begin <= c.end) {
        roomy = box;
        break;
      }
    }
    // The room below starts at a multiple of kBoxAlignment (never below the limit found above,
    // never above the box's own start).
    const std::uint64_t aligned = (roomy.begin + kBoxAlignment - 1) / kBoxAlignment * kBoxAlignment;
    roomy.begin = std::min(box.begin, aligned);
    if (memory_ == nullptr || memory_->fits_without_eviction(device, roomy.size())) box = roomy;
  }
  Held made;
  if (merged.empty()) {
    made = allocate(device, box);
  } else {
    // The merged allocations stay while the box is allocated (pinned: eviction may not take
    // them), so their bytes can move device-locally. When the device has no room for both, they
    // are boxed out first (their bytes go home and are fetched again later).
    if (memory_ != nullptr) {
      for (const Held& h : merged) memory_->use(device, h.id);
    }
    bool moved = true;
    try {
      made = allocate(device, box);
    } catch (const OutOfDeviceMemory&) {
      moved = false;
    }
    if (memory_ != nullptr) {
      for (const Held& h : merged) memory_->unuse(device, h.id);
    }
    if (moved) {
      // Their bytes move with copies the client issues without waiting; each merged allocation
      // is freed once its users and those copies have finished.
      for (const Held& h : merged) {
        EventList users;
        if (client_ != nullptr) users = client_->relocate(device, h.where, made.where);
        retire_held(device, h, std::move(users));
      }
    } else {
      // Boxed out, they need no room: the new box holds only the bytes asked for (an
      // out-of-core launch's chunks walk through a buffer whose whole does not fit).
      for (const Held& h : merged) box_out_held(device, h);
      made = allocate(device, bytes);
    }
  }
  check_if_enabled();
  return made.where;
}

void Residency::box_out_held(std::size_t device, const Held& h) {
  if (memory_ != nullptr) {
    memory_->evict(device, h.id);  // counted as an eviction; evict() drops it from held_
    return;
  }
  if (client_ != nullptr) {
    if (h.where.is_packed()) {
      client_->box_out_rows(device, h.where.box().held_bytes());
    } else {
      client_->box_out(device, h.where.covers());
    }
  }
  free_held(device, h);
}

ResidentAllocation Residency::begin_use(std::size_t device, const ResidentBox& bytes,
                                        Placement placement) {
  // Already held as ensure() would keep it (a repeated launch): marking it in use is all that
  // happens, one DeviceMemory call instead of ensure()'s touch and then use (an allocation in
  // use is never the least recently used one; unuse() makes it the most recent).
  if (const std::size_t i = fast_use_index(device, bytes, placement); i != kNone) {
    memory_->use(device, held_[device][i].id);
    return held_[device][i].where;
  }
  const ResidentAllocation a = ensure(device, bytes, placement);
  if (memory_ != nullptr) memory_->use(device, held_[device][index_of(device, bytes)].id);
  return a;
}

std::size_t Residency::fast_use_index(std::size_t device, const ResidentBox& bytes,
                                      Placement placement) const {
  if (memory_ == nullptr || device >= held_.size() || retired_ || bytes.is_packed() ||
      bytes.bytes.empty() || bytes.bytes.end > size_) {
    return kNone;
  }
  const std::size_t i = index_of(device, bytes);
  return i != kNone && (placement == Placement::merge || held_[device][i].where.box() == bytes)
             ? i
             : kNone;
}

bool Residency::held_for_use(std::size_t device, const ResidentBox& bytes) const {
  return fast_use_index(device, bytes, Placement::merge) != kNone;
}

void Residency::end_use(std::size_t device, const ResidentBox& bytes) {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::end_use: unknown device");
  if (memory_ == nullptr) return;
  const std::size_t i = index_of(device, bytes);
  if (i != kNone) memory_->unuse(device, held_[device][i].id);
}

void Residency::retire() {
  if (retired_) return;
  retired_ = true;
  if (memory_ == nullptr) return;
  for (std::size_t d = 0; d < held_.size(); ++d) {
    for (const Held& h : held_[d]) memory_->use(d, h.id);
  }
  for (const Retiring& r : retiring_) memory_->use(r.device, r.held.id);  // no reclaim either
}

std::uint64_t Residency::allocated_bytes(std::size_t device) const {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::allocated_bytes: unknown device");
  std::uint64_t total = 0;
  for (const Held& h : held_[device]) total += h.where.allocation.size;
  return total;
}

std::uint64_t Residency::retiring_bytes(std::size_t device) const {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::retiring_bytes: unknown device");
  std::uint64_t total = 0;
  for (const Retiring& r : retiring_) {
    if (r.device == device) total += r.held.where.allocation.size;
  }
  return total;
}

void Residency::release(std::size_t device) {
  UNIMEM_REQUIRE(device < held_.size(), "Residency::release: unknown device");
  for (std::size_t i = 0; i < retiring_.size();) {
    if (retiring_[i].device != device) {
      ++i;
      continue;
    }
    try {
      wait_all(retiring_[i].users);
    } catch (...) {  // a failed operation has finished too; its own event reported the failure
    }
    const Retiring r = retiring_[i];
    try {
      free_retiring(i);
    } catch (...) {  // a driver that cannot free leaks; the caller may be a destructor
      if (i < retiring_.size() && retiring_[i].held.where == r.held.where) {
        retiring_.erase(retiring_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
  while (!held_[device].empty()) {
    const Held h = held_[device].back();
    try {
      free_held(device, h);
    } catch (...) {  // a driver that cannot free leaks; the caller may be a destructor
      if (!held_[device].empty() && held_[device].back().where == h.where) {
        held_[device].pop_back();
        ++changes_;
      }
    }
  }
}

void Residency::release_all() {
  for (std::size_t d = 0; d < held_.size(); ++d) release(d);
}

void Residency::adopt(std::size_t device, std::uint64_t base, DeviceAllocation allocation,
                      DeviceMemory::EntryId id) {
  std::vector<Held>& list = held_.at(device);
  auto at =
      std::find_if(list.begin(), list.end(), [base](const Held& h) { return h.where.base > base; });
  ResidentAllocation where{allocation, base};
  if (allocating_.is_packed() && allocating_.bytes.begin == base) {
    where.pitch = allocating_.pitch;
    where.width = allocating_.width;
  }
  allocating_ = ResidentBox{};
  list.insert(at, Held{where, id});
  ++changes_;
}

DeviceAllocation Residency::forget(std::size_t device, DeviceMemory::EntryId id) {
  std::vector<Held>& list = held_.at(device);
  auto it = std::find_if(list.begin(), list.end(), [id](const Held& h) { return h.id == id; });
  if (it != list.end()) {
    const DeviceAllocation a = it->where.allocation;
    list.erase(it);
    ++changes_;
    return a;
  }
  auto r = std::find_if(retiring_.begin(), retiring_.end(),
                        [&](const Retiring& x) { return x.device == device && x.held.id == id; });
  UNIMEM_REQUIRE(r != retiring_.end(), "Residency::forget: no such allocation");
  const DeviceAllocation a = r->held.where.allocation;
  retiring_.erase(r);
  return a;
}

std::optional<DeviceAllocation> Residency::reclaim(std::size_t device, DeviceMemory::EntryId id,
                                                   bool wait) {
  auto r = std::find_if(retiring_.begin(), retiring_.end(),
                        [&](const Retiring& x) { return x.device == device && x.held.id == id; });
  UNIMEM_REQUIRE(r != retiring_.end(), "Residency::reclaim: no such retiring allocation");
  if (wait) {
    try {
      wait_all(r->users);
    } catch (...) {  // a failed operation has finished too; its own event reported the failure
    }
  } else {
    while (!r->users.empty() && r->users.back().is_complete()) r->users.pop_back();
    if (!r->users.empty()) return std::nullopt;
  }
  const DeviceAllocation a = r->held.where.allocation;
  retiring_.erase(r);
  return a;
}

DeviceAllocation Residency::evict(std::size_t device, DeviceMemory::EntryId id) {
  if (client_ != nullptr) {
    const std::vector<Held>& list = held_.at(device);
    auto it = std::find_if(list.begin(), list.end(), [id](const Held& h) { return h.id == id; });
    UNIMEM_REQUIRE(it != list.end(), "Residency::evict: no such allocation");
    if (it->where.is_packed()) {
      client_->box_out_rows(device, it->where.box().held_bytes());
    } else {
      client_->box_out(device, it->where.covers());
    }
  }
  return forget(device, id);
}

bool Residency::busy_on(std::size_t device, DeviceMemory::EntryId id) const {
  if (client_ == nullptr) return false;
  const std::vector<Held>& list = held_.at(device);
  auto it = std::find_if(list.begin(), list.end(), [id](const Held& h) { return h.id == id; });
  if (it == list.end()) return client_->busy_on(device);
  if (it->where.is_packed()) return client_->busy_on_rows(device, it->where.box().held_bytes());
  return client_->busy_on(device, it->where.covers());
}

bool Residency::holds(std::size_t device, const DeviceAllocation& allocation) const {
  if (device >= held_.size()) return false;
  return std::any_of(held_[device].begin(), held_[device].end(),
                     [&](const Held& h) { return h.where.allocation == allocation; }) ||
         std::any_of(retiring_.begin(), retiring_.end(), [&](const Retiring& r) {
           return r.device == device && r.held.where.allocation == allocation;
         });
}

std::string Residency::describe() const {
  return client_ != nullptr ? client_->describe()
                            : "a buffer of " + std::to_string(size_) + " bytes";
}

void Residency::check_if_enabled() const {
#if UNIMEM_INVARIANTS_ENABLED
  check_invariants();
#endif
}

void Residency::check_invariants() const {
  for (std::size_t d = 0; d < held_.size(); ++d) {
    auto fail = [d](const std::string& what) {
      detail::throw_invariant("Residency: device " + std::to_string(d) + ": " + what, __FILE__,
                              __LINE__);
    };
    const std::vector<Held>& list = held_[d];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const ResidentAllocation& r = list[i].where;
      if (!r.allocation.valid() || r.allocation.size == 0) {
        fail("a null or empty allocation of " + std::to_string(r.allocation.size) + " bytes");
      }
      if (r.is_packed() && (r.width == 0 || r.allocation.size % r.width != 0 ||
                            r.base % r.pitch + r.width > r.pitch)) {
        fail("a packed allocation of " + std::to_string(r.allocation.size) + " bytes has rows of " +
             std::to_string(r.width) + " bytes at pitch " + std::to_string(r.pitch) +
             " starting at byte " + std::to_string(r.base));
      }
      if (r.base > size_ || r.covers().end > size_) {
        fail("an allocation holds bytes " + r.covers().to_string() + " of a buffer of " +
             std::to_string(size_) + " bytes");
      }
      if (i > 0 && list[i - 1].where.base > r.base) {
        fail("allocations of bytes " + list[i - 1].where.covers().to_string() + " and " +
             r.covers().to_string() + " are out of order");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (boxes_meet(list[j].where.box(), r.box())) {
          fail("allocations of bytes " + list[j].where.covers().to_string() + " and " +
               r.covers().to_string() + " overlap or touch");
        }
      }
      if (memory_ != nullptr && list[i].id == 0) {
        fail("the allocation of bytes " + r.covers().to_string() +
             " is not accounted by DeviceMemory");
      }
    }
  }
  for (const Retiring& r : retiring_) {
    const std::string what =
        "the retiring allocation of bytes " + r.held.where.covers().to_string();
    if (r.device >= held_.size()) {
      detail::throw_invariant(what + " is on unknown device " + std::to_string(r.device), __FILE__,
                              __LINE__);
    }
    if (!r.held.where.allocation.valid() || r.held.where.allocation.size == 0) {
      detail::throw_invariant(what + " is null or empty", __FILE__, __LINE__);
    }
    if (memory_ != nullptr && r.held.id == 0) {
      detail::throw_invariant(what + " is not accounted by DeviceMemory", __FILE__, __LINE__);
    }
  }
}

}  // namespace unimem

#include "api/measurement.hpp"

namespace unimem {

const char* measurement_name(MeasurementMode mode) {
  switch (mode) {
    case MeasurementMode::normal:
      return "alpha";
    case MeasurementMode::no_transfers:
      return "beta";
    case MeasurementMode::no_coherence:
      return "gamma";
  }
  return "?";
}

void Measurement::set_mode(MeasurementMode mode) {
  mode_ = mode;
  for (Event& e : last_kernel_) e = Event{};
}

void Measurement::add_kernel_dependencies(std::size_t device, EventList& deps) const {
  if (coherent()) return;
  const Event& last = last_kernel_.at(device);
  if (!last.is_null()) deps.push_back(last);
}

void Measurement::add_host_read_dependencies(EventList& deps) const {
  if (coherent()) return;
  for (const Event& k : last_kernel_) {
    if (!k.is_null()) deps.push_back(k);
  }
}

void Measurement::record_kernel(std::size_t device, const Event& kernel) {
  if (coherent()) return;
  last_kernel_.at(device) = kernel;
}

}  // namespace unimem

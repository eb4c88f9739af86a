// Runtime (<unimem/runtime.hpp>): the public face of RuntimeCore; every member forwards.

#include <unimem/runtime.hpp>

#include "api/default_devices.hpp"
#include "api/runtime_core.hpp"

namespace unimem {

Runtime::Runtime(RuntimeOptions options)
    : core_(std::make_unique<RuntimeCore>(default_devices(), options)) {}

Runtime::Runtime(DeviceRegistry devices, RuntimeOptions options)
    : core_(std::make_unique<RuntimeCore>(std::move(devices), options)) {}

Runtime::~Runtime() = default;

std::size_t Runtime::device_count() const { return core_->device_count(); }

std::string Runtime::device_name(std::size_t index) const {
  if (index >= core_->device_count()) {
    throw PreconditionError("Runtime::device_name: no device " + std::to_string(index) +
                            " (the runtime has " + std::to_string(core_->device_count()) + ")");
  }
  return core_->device(index).name();
}

BufferId Runtime::create_buffer(std::uint64_t size, std::string name,
                                std::optional<UpdateStrategy> strategy) {
  return core_->create_buffer(size, std::move(name), strategy);
}

void Runtime::release_buffer(BufferId buffer) { core_->release_buffer(buffer); }

std::uint64_t Runtime::buffer_size(BufferId buffer) const { return core_->buffer_size(buffer); }

void Runtime::set_strategy(UpdateStrategy strategy) { core_->set_strategy(strategy); }

UpdateStrategy Runtime::strategy() const { return core_->strategy(); }

void Runtime::set_buffer_strategy(BufferId buffer, std::optional<UpdateStrategy> strategy) {
  core_->set_buffer_strategy(buffer, strategy);
}

Event Runtime::write(BufferId buffer, std::uint64_t offset, std::span<const std::byte> data) {
  return core_->write(buffer, offset, data);
}

void Runtime::write_blocking(BufferId buffer, std::uint64_t offset,
                             std::span<const std::byte> data) {
  core_->write_blocking(buffer, offset, data);
}

Event Runtime::read(BufferId buffer, std::uint64_t offset, std::span<std::byte> out) {
  return core_->read(buffer, offset, out);
}

void Runtime::read_blocking(BufferId buffer, std::uint64_t offset, std::span<std::byte> out) {
  core_->read_blocking(buffer, offset, out);
}

MeasurementMode Runtime::measurement() const { return core_->measurement(); }

void Runtime::set_measurement(MeasurementMode mode) { core_->set_measurement(mode); }

void Runtime::finish() { core_->finish(); }

TransferStats Runtime::stats() const { return core_->stats(); }

TransferStats Runtime::buffer_stats(BufferId buffer) const { return core_->buffer_stats(buffer); }

std::string Runtime::stats_json() const { return core_->stats_json(); }

std::string Runtime::write_trace() { return core_->write_trace(); }

}  // namespace unimem

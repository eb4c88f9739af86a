// A program built against the installed unimem (find_package or pkg-config), with only the public
// headers. It exits 0 only when every call behaves as documented.
#include <cstdio>
#include <string>

#include <unimem/unimem.hpp>

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "consumer: %s\n", what);
      ++failures;
    }
  };
  expect(!unimem::version().empty(), "version() is empty");

  // An event completed by hand runs its callback and waits without blocking.
  auto [event, state] = unimem::Event::make_manual();
  bool ran = false;
  event.on_complete([&ran] { ran = true; });
  expect(!event.is_complete(), "a fresh manual event is already complete");
  state->complete();
  event.wait();
  expect(event.is_complete() && ran, "a completed manual event did not run its callback");

  // Library exceptions are catchable by their public types.
  try {
    throw unimem::PreconditionError("buffer 'x': range [4, 8) outside its 4 bytes");
  } catch (const std::invalid_argument& e) {
    expect(std::string(e.what()).find("buffer 'x'") != std::string::npos, "message lost");
  }
  std::printf("unimem %s consumer: %s\n", std::string(unimem::version()).c_str(),
              failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}

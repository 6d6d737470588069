#include "util/pin_library.h"

#include <dlfcn.h>

namespace podnet {

bool PinLibrary() {
  // A function-local static is initialized once even when the hop thread and the closer start at the same time.
  static const bool pinned = [] {
    Dl_info self;
    if (dladdr(reinterpret_cast<void*>(&PinLibrary), &self) == 0 || self.dli_fname == nullptr) return false;
    return dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr;
  }();
  return pinned;
}

}  // namespace podnet

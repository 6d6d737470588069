#include "util/pin_library.h"

#include <dlfcn.h>

namespace podnet {

void PinLibrary() {
  static bool pinned = false;
  if (pinned) return;
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&PinLibrary), &self) != 0 && self.dli_fname != nullptr) {
    pinned = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr;
  }
}

}  // namespace podnet

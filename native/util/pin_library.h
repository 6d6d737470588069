// Threads of this library that outlive the call that started them (the hop thread, the closer) run its code until the
// process ends, but an addon that only worker threads loaded is unloaded when the last of them ends.
#pragma once

namespace podnet {

// PinLibrary makes this shared library stay loaded for the process's life (RTLD_NODELETE), once for the process, and
// tells whether it is. Call it before starting such a thread.
bool PinLibrary();

}  // namespace podnet

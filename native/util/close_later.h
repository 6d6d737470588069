// Closing fds whose close(2) can wait on the kernel, off the caller's thread.
#pragma once

#include <functional>

namespace podnet {

// CloseLater hands fd to a thread of the process's own that closes fds in the order given, and returns at once; when
// no such thread can be started, it closes fd itself. For NETLINK_NETFILTER sockets: the kernel
// releases one (nf_tables' NETLINK_URELEASE handler) only after flushing nf_tables' deferred destroy work, which
// waits for an RCU grace period (10-20 ms on the 2-core VMs here) whenever a namespace anywhere on the machine has
// deleted nf_tables objects since that work last ran: a close on the JS thread would stall the event loop that long.
void CloseLater(int fd);

// PendingCloses is how many fds handed to CloseLater are not closed yet.
int PendingCloses();

// WhenClosed calls done once every fd handed to CloseLater before this call is closed: on the closer thread, or on
// the caller's before it returns when none is pending. done must not throw.
void WhenClosed(std::function<void()> done);

}  // namespace podnet

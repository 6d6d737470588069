#include "netns/netns_create.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netns/in_netns.h"

namespace podnet {

// The calling thread's own namespace: /proc/self/ns/net would name the main thread's.
static const char kThreadNetns[] = "/proc/thread-self/ns/net";

// Sets IFF_UP on lo in the calling thread's namespace. The ioctl needs no netlink socket, no request encoding and no
// ack: one socket and two calls, the same device change `ip link set lo up` asks for over rtnetlink.
static ErrorInfo LoopbackUp() {
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return SystemError(errno, "socket");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  ErrorInfo result;
  if (ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) {
    result = SystemError(errno, "ioctl");
  } else if ((ifr.ifr_flags & IFF_UP) == 0) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    if (ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) result = SystemError(errno, "ioctl");
  }
  close(sock);
  return result;
}

ErrorInfo CreateNetns(int* fd, NetnsIdentity* id) {
  *fd = -1;
  int made = -1;
  ErrorInfo inside;
  ErrorInfo err = RunInNewNetns([&] {
    made = open(kThreadNetns, O_RDONLY | O_CLOEXEC);
    if (made < 0) {
      inside = SystemError(errno, "open").With("path", kThreadNetns);
      return;
    }
    inside = LoopbackUp();
  });
  if (!err.failed()) err = inside;
  if (!err.failed()) err = IdentifyNetns(made, id);
  if (err.failed()) {
    if (made >= 0) close(made);
    return err.With("command", "create");
  }
  *fd = made;
  return err;
}

}  // namespace podnet

// The proxy end of bench scenario 7 in C, as ztunnel's is native: connects to the agent's ZDS socket, says
// hello (V1), and answers every request with an empty Ack, closing any fd that came with it. Exits at EOF.
// The bytes are fixed protobuf encodings: ZdsHello{version: V1} = 08 01, WorkloadResponse{ack: {}} = 0a 00.
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
  if (fd < 0 || connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) return perror("connect"), 1;
  const unsigned char hello[] = {0x08, 0x01}, ack[] = {0x0a, 0x00};
  if (send(fd, hello, sizeof hello, MSG_NOSIGNAL) < 0) return 1;
  for (;;) {
    unsigned char buf[1024];
    char control[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = {buf, sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) return n == 0 ? 0 : 1;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (int i = 0; i < count; i++) close(((int*)CMSG_DATA(c))[i]);
    }
    if (send(fd, ack, sizeof ack, MSG_NOSIGNAL) < 0) return 1;
  }
}

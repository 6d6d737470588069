// Scenario 10's floor: the agent's end of a ZDS Add in C. Listens on SOCKET_PATH, starts PEER (zds_ack_peer) against
// it, takes its hello, then COUNT times sends the Add in ADD_FILE (podnet's own encoding of the scenario's Add) with
// the namespace at NETNS_PATH as its SCM_RIGHTS fd and waits for the ack, printing each round trip in microseconds,
// one per line. What no client of a unix socket can go below on the machine: two wake-ups across processes.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(1);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: zds_add_raw SOCKET_PATH PEER ADD_FILE NETNS_PATH COUNT\n");
    return 2;
  }
  unsigned char add[1024];
  FILE* f = fopen(argv[3], "rb");
  if (!f) die("open ADD_FILE");
  size_t len = fread(add, 1, sizeof add, f);
  fclose(f);
  if (len == 0) return fprintf(stderr, "zds_add_raw: ADD_FILE is empty\n"), 1;
  int netns = open(argv[4], O_RDONLY | O_CLOEXEC);
  if (netns < 0) die("open NETNS_PATH");
  int count = atoi(argv[5]);

  int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
  if (listener < 0 || bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 1) != 0) die("listen");
  pid_t peer = fork();
  if (peer < 0) die("fork");
  if (peer == 0) {
    execl(argv[2], argv[2], argv[1], (char*)NULL);
    _exit(127);
  }
  int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (conn < 0) die("accept");
  unsigned char reply[1024];
  if (recv(conn, reply, sizeof reply, 0) <= 0) die("recv hello");

  for (int i = 0; i < count; i++) {
    double t0 = now_us();
    union {
      char bytes[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = {add, len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &netns, sizeof(int));
    if (sendmsg(conn, &msg, MSG_NOSIGNAL) < 0) die("sendmsg");
    if (recv(conn, reply, sizeof reply, 0) <= 0) die("recv ack");
    printf("%.3f\n", now_us() - t0);
  }
  close(conn);  // the peer exits at EOF
  waitpid(peer, NULL, 0);
  return 0;
}

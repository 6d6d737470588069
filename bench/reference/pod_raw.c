/*
 * The floor of one pod's netlink work, for bench scenario 16: what addPod (nftables backend) asks of the kernel, done
 * by one C thread with no library: enter the pod's namespace, open a netfilter and a route socket there, go home,
 * send the pod's in-pod batch and its policy rule and route, close, then add the pod's probe element on the host.
 * No proxy round trip (podnet's runs beside the rest). The request bytes are podnet's own, captured by the bench
 * through fake kernels and written to files: each file is records of a u32 length (host order) and one request.
 *
 *   pod_raw HOST_NETNS SETUP INPOD ROUTES ELEMENT
 *
 * Enters HOST_NETNS, sends SETUP there (the probe table and set), then reads one pod per stdin line, "NETNS_PATH
 * A.B.C.D", does the pod (the ELEMENT request with its placeholder address 10.255.255.254 replaced by the pod's) and
 * answers one line: its own clock for the pod in ms. Exits at EOF. Any refusal or failure exits 1 with a message.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct request {
  uint8_t *bytes;
  size_t len;
  int acks; /* messages in it that ask for an ACK: the replies to wait for */
};
struct requests {
  struct request r[16];
  int n;
};

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void load(const char *path, struct requests *out) {
  FILE *f = fopen(path, "rb");
  if (!f) die(path);
  uint32_t len;
  out->n = 0;
  while (out->n < 16 && fread(&len, sizeof len, 1, f) == 1) {
    struct request *q = &out->r[out->n++];
    q->bytes = malloc(len);
    q->len = len;
    if (!q->bytes || fread(q->bytes, 1, len, f) != len) die(path);
    q->acks = 0;
    for (size_t at = 0; at + NLMSG_HDRLEN <= len;) {
      struct nlmsghdr *h = (struct nlmsghdr *)(q->bytes + at);
      if (h->nlmsg_flags & NLM_F_ACK) q->acks++;
      at += NLMSG_ALIGN(h->nlmsg_len);
    }
  }
  fclose(f);
}

static int nl_socket(int protocol) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  struct sockaddr_nl local = {.nl_family = AF_NETLINK};
  if (fd < 0 || bind(fd, (struct sockaddr *)&local, sizeof local) != 0) die("netlink socket");
  return fd;
}

static uint8_t reply[1 << 16];

/* Sends one request and reads until each message that asked for one has its ACK; a refusal exits. */
static void exchange(int fd, const struct request *q) {
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(fd, q->bytes, q->len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) die("sendto");
  for (int left = q->acks; left > 0;) {
    ssize_t n = recv(fd, reply, sizeof reply, 0);
    if (n < 0) die("recv");
    for (ssize_t at = 0; at + (ssize_t)NLMSG_HDRLEN <= n;) {
      struct nlmsghdr *h = (struct nlmsghdr *)(reply + at);
      if (h->nlmsg_type == NLMSG_ERROR) {
        int err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
        if (err != 0) {
          fprintf(stderr, "pod_raw: the kernel refused a request: %s\n", strerror(-err));
          exit(1);
        }
        left--;
      }
      at += NLMSG_ALIGN(h->nlmsg_len);
    }
  }
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: pod_raw HOST_NETNS SETUP INPOD ROUTES ELEMENT\n");
    return 2;
  }
  struct requests setup, inpod, routes, element;
  load(argv[2], &setup);
  load(argv[3], &inpod);
  load(argv[4], &routes);
  load(argv[5], &element);
  if (element.n != 1) return fprintf(stderr, "pod_raw: ELEMENT holds %d requests, not 1\n", element.n), 1;
  /* This program has one thread, so it can enter namespaces itself: first the host's, for good. */
  int host_ns = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (host_ns < 0 || setns(host_ns, CLONE_NEWNET) != 0) die("setns host");
  int host = nl_socket(NETLINK_NETFILTER);
  for (int i = 0; i < setup.n; i++) exchange(host, &setup.r[i]);
  struct request *add = &element.r[0];
  uint8_t *ip = NULL;
  const uint8_t placeholder[4] = {10, 255, 255, 254};
  for (size_t at = 0; at + 4 <= add->len; at++) if (memcmp(add->bytes + at, placeholder, 4) == 0) ip = add->bytes + at;
  if (!ip) return fprintf(stderr, "pod_raw: ELEMENT lacks the placeholder address\n"), 1;

  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char path[4000], addr[64];
    struct in_addr a;
    if (sscanf(line, "%3999s %63s", path, addr) != 2 || inet_pton(AF_INET, addr, &a) != 1) {
      fprintf(stderr, "pod_raw: bad line: %s", line);
      return 1;
    }
    memcpy(ip, &a, 4);
    double t0 = now_ms();
    int pod_ns = open(path, O_RDONLY | O_CLOEXEC);
    if (pod_ns < 0 || setns(pod_ns, CLONE_NEWNET) != 0) die("setns pod");
    int nft = nl_socket(NETLINK_NETFILTER), rt = nl_socket(NETLINK_ROUTE);
    if (setns(host_ns, CLONE_NEWNET) != 0) die("setns home");
    for (int i = 0; i < inpod.n; i++) exchange(nft, &inpod.r[i]);
    for (int i = 0; i < routes.n; i++) exchange(rt, &routes.r[i]);
    close(nft);
    close(rt);
    close(pod_ns);
    exchange(host, add);
    printf("%.4f\n", now_ms() - t0);
    fflush(stdout);
  }
  return 0;
}

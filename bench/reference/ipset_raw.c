/*
 * Raw nfnetlink ipset adds: the physical floor podnet's benchmarks compare
 * against. No library; compiled with cc at bench time and run inside the
 * bench's namespace. Creates hash:ip set NAME (comment, maxelem 1M), adds N
 * entries 10.x.y.z with comment "c<i>", prints one JSON line, destroys it.
 * Besides its clock it reports the CPU time of the same loop (user + system,
 * getrusage), which a shared machine's load does not stretch as it does the
 * clock.
 *
 *   ipset_raw single N NAME   one exclusive ADD per round trip; the loop is timed as a whole (usPerEntry
 *                             is the mean), with no clock read per add, as podnet's block of adds is
 *   ipset_raw batch N NAME    ADT batches (< 64 KiB per message), one message per sendmsg
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SUBSYS 6
#define CMD_CREATE 2
#define CMD_DESTROY 3
#define CMD_ADD 9
#define CMD_TYPE 13
#define A_PROTOCOL 1
#define A_SETNAME 2
#define A_TYPENAME 3
#define A_REVISION 4
#define A_FAMILY 5
#define A_DATA 7
#define A_ADT 8
#define A_LINENO 9
#define D_IP 1
#define D_CADT_FLAGS 8
#define D_LINENO 9
#define D_MAXELEM 19
#define D_COMMENT 26
#define IPV4 1
#define NESTED 0x8000
#define NETORDER 0x4000

static uint8_t buf[1 << 17];
static size_t len;
static uint32_t seq;
static int fd;

static void put(uint16_t type, const void *data, size_t n) {
  struct nlattr *a = (struct nlattr *)(buf + len);
  a->nla_len = (uint16_t)(NLA_HDRLEN + n);
  a->nla_type = type;
  if (n) memcpy(buf + len + NLA_HDRLEN, data, n);
  len += NLA_ALIGN(NLA_HDRLEN + n);
}
static size_t nest(uint16_t type) { size_t at = len; put(type | NESTED, NULL, 0); return at; }
static void end_nest(size_t at) { ((struct nlattr *)(buf + at))->nla_len = (uint16_t)(len - at); }
static void u8(uint16_t t, uint8_t v) { put(t, &v, 1); }
static void be32(uint16_t t, uint32_t v) { v = htonl(v); put(t | NETORDER, &v, 4); }
static void str(uint16_t t, const char *s) { put(t, s, strlen(s) + 1); }

static void begin(uint8_t cmd, uint16_t flags) {
  len = 0;
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  memset(h, 0, sizeof *h);
  h->nlmsg_type = (SUBSYS << 8) | cmd;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  h->nlmsg_seq = ++seq;
  len = NLMSG_HDRLEN;
  struct nfgenmsg *g = (struct nfgenmsg *)(buf + len);
  g->nfgen_family = 2;
  g->version = 0;
  g->res_id = 0;
  len += NLMSG_ALIGN(sizeof *g);
  u8(A_PROTOCOL, 7);
}

/* Sends buf and returns the error of its ACK (0 on success). TYPE answers with a message first: *rev gets it. */
static int roundtrip(uint8_t *rev) {
  ((struct nlmsghdr *)buf)->nlmsg_len = (uint32_t)len;
  if (send(fd, buf, len, 0) < 0) { perror("send"); exit(1); }
  static uint8_t rx[1 << 17];
  for (;;) {
    ssize_t n = recv(fd, rx, sizeof rx, 0);
    if (n < 0) { perror("recv"); exit(1); }
    for (struct nlmsghdr *h = (struct nlmsghdr *)rx; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != seq) continue;
      if (h->nlmsg_type == NLMSG_ERROR) return -((struct nlmsgerr *)NLMSG_DATA(h))->error;
      if (rev) {
        uint8_t *p = (uint8_t *)NLMSG_DATA(h) + 4, *e = (uint8_t *)h + h->nlmsg_len;
        while (p + 4 <= e) {
          struct nlattr *a = (struct nlattr *)p;
          if ((a->nla_type & 0x3fff) == A_REVISION) *rev = *((uint8_t *)a + NLA_HDRLEN);
          p += NLA_ALIGN(a->nla_len);
        }
      }
    }
  }
}

static void entry(uint32_t i, uint32_t lineno) {
  size_t d = nest(A_DATA);
  size_t ip = nest(D_IP);
  uint32_t addr = htonl((10u << 24) | (i & 0xffffff));
  put(IPV4 | NETORDER, &addr, 4);
  end_nest(ip);
  char c[16];
  snprintf(c, sizeof c, "c%u", i);
  str(D_COMMENT, c);
  if (lineno) be32(D_LINENO, lineno);
  end_nest(d);
}

static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s single|batch N NAME\n", argv[0]); return 2; }
  int batch = strcmp(argv[1], "batch") == 0;
  uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
  const char *name = argv[3];
  fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd < 0) { perror("socket"); return 1; }
  int big = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("bind"); return 1; }

  uint8_t rev = 0;
  begin(CMD_TYPE, 0);
  str(A_TYPENAME, "hash:ip");
  u8(A_FAMILY, 2);
  if (roundtrip(&rev)) { fprintf(stderr, "TYPE failed\n"); return 1; }
  begin(CMD_CREATE, NLM_F_CREATE | NLM_F_EXCL);
  str(A_SETNAME, name);
  str(A_TYPENAME, "hash:ip");
  u8(A_REVISION, rev);
  u8(A_FAMILY, 2);
  size_t d = nest(A_DATA);
  be32(D_MAXELEM, 1u << 20);
  be32(D_CADT_FLAGS, 0x10);
  end_nest(d);
  if (roundtrip(NULL)) { fprintf(stderr, "CREATE failed\n"); return 1; }

  double c0 = cpu_ms();
  double t0 = now_ms();
  if (!batch) {
    for (uint32_t i = 0; i < n; i++) {
      begin(CMD_ADD, NLM_F_EXCL);
      str(A_SETNAME, name);
      size_t dd = len;
      entry(i, 0);
      (void)dd;
      if (roundtrip(NULL)) { fprintf(stderr, "ADD %u failed\n", i); return 1; }
    }
  } else {
    uint32_t i = 0;
    while (i < n) {
      begin(CMD_ADD, NLM_F_EXCL);
      str(A_SETNAME, name);
      uint32_t zero = 0;
      put(A_LINENO, &zero, 4);
      size_t adt = nest(A_ADT);
      while (i < n && len - adt < 65000 - 64) entry(i, i + 1), i++;
      end_nest(adt);
      if (roundtrip(NULL)) { fprintf(stderr, "ADT batch failed\n"); return 1; }
    }
  }
  double ms = now_ms() - t0;
  double cpu = cpu_ms() - c0;

  begin(CMD_DESTROY, 0);
  str(A_SETNAME, name);
  roundtrip(NULL);
  printf("{\"mode\":\"%s\",\"n\":%u,\"totalMs\":%.3f,\"usPerEntry\":%.4f,\"cpuMs\":%.3f,\"cpuUsPerEntry\":%.4f}\n", argv[1], n, ms,
         n ? ms * 1000.0 / n : 0.0, cpu, n ? cpu * 1000.0 / n : 0.0);
  return 0;
}

/*
 * Raw nf_tables element adds: the floor scenario 12 compares podnet's
 * element batch against. No library; compiled with cc at bench time and run
 * inside the bench's namespace, where the set (inet TABLE SET, ipv4_addr)
 * already is. Adds N elements 10.x.y.z, each with a 36-byte comment in
 * libnftnl's user data format (as podnet writes them), in one batch: BEGIN,
 * NEWSETELEM messages of < 60 KB of elements each (NLM_F_CREATE | EXCL, every
 * message acked), END, all in one sendmsg. The time is taken from before the
 * batch is encoded to the last ack; one JSON line is printed.
 *
 *   nft_elements_raw N TABLE SET
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static uint8_t *buf;
static size_t len;

static void put(uint16_t type, const void *data, size_t n) {
  struct nlattr *a = (struct nlattr *)(buf + len);
  a->nla_len = (uint16_t)(NLA_HDRLEN + n);
  a->nla_type = type;
  if (n) memcpy(buf + len + NLA_HDRLEN, data, n);
  size_t padded = NLA_ALIGN(NLA_HDRLEN + n);
  memset(buf + len + NLA_HDRLEN + n, 0, padded - NLA_HDRLEN - n);
  len += padded;
}
static size_t nest(uint16_t type) { size_t at = len; put(type | NLA_F_NESTED, NULL, 0); return at; }
static void end_nest(size_t at) { ((struct nlattr *)(buf + at))->nla_len = (uint16_t)(len - at); }
static void str(uint16_t t, const char *s) { put(t, s, strlen(s) + 1); }

static size_t begin(uint16_t type, uint16_t flags, uint8_t family, uint32_t seq, uint16_t resId) {
  size_t at = len;
  struct nlmsghdr *h = (struct nlmsghdr *)(buf + len);
  h->nlmsg_type = type;
  h->nlmsg_flags = NLM_F_REQUEST | flags;
  h->nlmsg_seq = seq;
  h->nlmsg_pid = 0;
  len += NLMSG_HDRLEN;
  struct nfgenmsg *g = (struct nfgenmsg *)(buf + len);
  g->nfgen_family = family;
  g->version = NFNETLINK_V0;
  g->res_id = htons(resId);
  len += NLMSG_ALIGN(sizeof *g);
  return at;
}
static void end_msg(size_t at) { ((struct nlmsghdr *)(buf + at))->nlmsg_len = (uint32_t)(len - at); }

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s N TABLE SET\n", argv[0]); return 2; }
  uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
  const char *table = argv[2], *set = argv[3];
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd < 0) { perror("socket"); return 1; }
  int big = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("bind"); return 1; }
  /* Room for every element (key, comment, nests: < 80 bytes each) and the headers, allocated before the clock. */
  size_t cap = (size_t)n * 96 + (1 << 16);
  buf = malloc(cap);
  if (!buf) { perror("malloc"); return 1; }
  memset(buf, 0, cap);

  double t0 = now_ms();
  uint32_t seq = 1;
  const uint32_t first = seq;
  end_msg(begin(NFNL_MSG_BATCH_BEGIN, NLM_F_ACK, AF_UNSPEC, seq++, NFNL_SUBSYS_NFTABLES));
  uint32_t i = 0;
  while (i < n) {
    size_t m = begin((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, NFPROTO_INET, seq++, 0);
    str(NFTA_SET_ELEM_LIST_TABLE, table);
    str(NFTA_SET_ELEM_LIST_SET, set);
    size_t list = nest(NFTA_SET_ELEM_LIST_ELEMENTS);
    do {
      size_t el = nest(NFTA_LIST_ELEM);
      size_t key = nest(NFTA_SET_ELEM_KEY);
      uint32_t addr = htonl((10u << 24) | (i & 0xffffff));
      put(NFTA_DATA_VALUE, &addr, 4);
      end_nest(key);
      /* libnftnl's user data: one TLV record, type 0 (comment), its length with the NUL, the text, the NUL. */
      uint8_t udata[2 + 37];
      udata[0] = 0;
      udata[1] = 37;
      snprintf((char *)udata + 2, 37, "5f0c2a1e-7b3d-4c9a-8e21-%012x", i);
      put(NFTA_SET_ELEM_USERDATA, udata, sizeof udata);
      end_nest(el);
      i++;
    } while (i < n && len - list < 60000);
    end_nest(list);
    end_msg(m);
  }
  end_msg(begin(NFNL_MSG_BATCH_END, 0, AF_UNSPEC, seq++, NFNL_SUBSYS_NFTABLES));
  struct iovec iov = {.iov_base = buf, .iov_len = len};
  struct msghdr mh = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iov, .msg_iovlen = 1};
  if (sendmsg(fd, &mh, 0) < 0) { perror("sendmsg"); return 1; }
  /* Acks: BEGIN and every element message (END asks for none). */
  uint32_t want = seq - 1 - first, acked = 0;
  static uint8_t rx[1 << 16];
  while (acked < want) {
    ssize_t got = recv(fd, rx, sizeof rx, 0);
    if (got < 0) { perror("recv"); return 1; }
    for (struct nlmsghdr *h = (struct nlmsghdr *)rx; NLMSG_OK(h, (size_t)got); h = NLMSG_NEXT(h, got)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      int err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
      if (err != 0) { fprintf(stderr, "message %u refused: %s\n", h->nlmsg_seq, strerror(-err)); return 1; }
      acked++;
    }
  }
  double ms = now_ms() - t0;
  printf("{\"n\":%u,\"totalMs\":%.3f,\"usPerElement\":%.4f}\n", n, ms, n ? ms * 1000.0 / n : 0.0);
  free(buf);
  close(fd);
  return 0;
}

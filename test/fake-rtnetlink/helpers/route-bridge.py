#!/usr/bin/env python3
# Test-only bridge to the real kernel for differential tests: reads one hex-encoded sendmsg buffer per stdin line,
# sends it on a NETLINK_ROUTE socket with NETLINK_EXT_ACK on (as podnet's socket transport sets it), and prints the
# reply datagrams as one line of space-separated hex. Run it only inside a throwaway namespace
# (ip netns exec NAME python3 route-bridge.py). With --fresh-netns it first moves itself into a namespace of its own
# (unshare(CLONE_NEWNET)), one whose lo was never up, which ends with the process.
import ctypes, socket, struct, sys

CLONE_NEWNET = 0x40000000
if '--fresh-netns' in sys.argv:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), 'unshare(CLONE_NEWNET)')

NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_EXT_ACK = 11
SO_RCVBUFFORCE = 33
SENTINEL_SEQ = 0xFFFFFFF0

def sentinel():
    # NLMSG_NOOP with REQUEST|ACK: netlink_rcv_skb acknowledges a control message without running any handler, so
    # its ACK marks the end of the replies to everything sent before it.
    return struct.pack('=IHHII', 16, 1, 1 | 4, SENTINEL_SEQ, 0)

def headers(d):
    off = 0
    while off + 16 <= len(d):
        ln, typ, fl, seq, _pid = struct.unpack_from('=IHHII', d, off)
        yield typ, fl, seq
        if ln < 16:
            break
        off += (ln + 3) & ~3

sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)  # big dumps must not overflow
sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
sock.bind((0, 0))
sock.settimeout(5)
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    request = bytes.fromhex(line)
    # The rest of a dump is produced while we read, after anything sent later: wait for each dump to end first.
    dumps = {seq for typ, fl, seq in headers(request) if fl & 0x300 == 0x300}
    sock.send(request)
    out = []
    while dumps:
        d = sock.recv(1 << 20)
        out.append(d.hex())
        for typ, _fl, seq in headers(d):
            if typ in (2, 3):
                dumps.discard(seq)
    sock.send(sentinel())
    while True:
        d = sock.recv(1 << 20)
        if any(typ == 2 and seq == SENTINEL_SEQ for typ, _fl, seq in headers(d)):
            break
        out.append(d.hex())
    print(' '.join(out), flush=True)

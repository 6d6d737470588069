#!/usr/bin/env python3
# Test-only bridge to the real kernel for differential tests: reads one hex-encoded sendmsg buffer per stdin line,
# sends it on a NETLINK_NETFILTER socket, and prints the reply datagrams as one line of space-separated hex.
# Run it only inside a throwaway namespace (ip netns exec NAME python3 kernel-bridge.py).
import socket, struct, sys

SENTINEL_SEQ = 0xFFFFFFF0

def sentinel():
    # IPSET_CMD_PROTOCOL with ACK: its ACK marks the end of the replies to everything sent before it.
    body = struct.pack('=BBH', 2, 0, 0) + struct.pack('=HHB3x', 5, 1, 7)
    return struct.pack('=IHHII', 16 + len(body), (6 << 8) | 1, 1 | 4, SENTINEL_SEQ, 0) + body

def headers(d):
    off = 0
    while off + 16 <= len(d):
        ln, typ, fl, seq, _pid = struct.unpack_from('=IHHII', d, off)
        yield typ, fl, seq
        if ln < 16:
            break
        off += (ln + 3) & ~3

def is_sentinel_ack(d):
    return any(typ == 2 and seq == SENTINEL_SEQ for typ, _fl, seq in headers(d))

sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
sock.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE: big dumps must not overflow
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
        if is_sentinel_ack(d):
            break
        if not any(seq == SENTINEL_SEQ for _t, _f, seq in headers(d)):
            out.append(d.hex())
    print(' '.join(out), flush=True)

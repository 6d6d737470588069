#!/usr/bin/env python3
"""A foreign SOCK_SEQPACKET peer for podnet's interop tests. Prints one JSON line per message to stdout.

  seqpacket_peer.py receive PATH          connect to PATH, send b"hello", receive one message (fds included),
                                          report it, send b"ack"
  seqpacket_peer.py send PATH FILE...     connect to PATH, send b"take" with each FILE opened as an fd, report the
                                          answer
  seqpacket_peer.py serve PATH            listen at PATH, accept once, receive one message, report it, send b"ack"
Each fd is reported as {link, ino, nstype}: what /proc/self/fd/N links to (a path, or "net:[inode]" for a namespace
opened through /proc), its inode, and "net" when the kernel says it is a network namespace (NS_GET_NSTYPE).
"""
import fcntl
import json
import os
import socket
import sys


NS_GET_NSTYPE = 0xB703  # _IO(0xb7, 0x3), linux/nsfs.h
CLONE_NEWNET = 0x40000000


def describe(fd):
    try:
        nstype = "net" if fcntl.ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET else "other"
    except OSError:
        nstype = None
    return {"link": os.readlink(f"/proc/self/fd/{fd}"), "ino": os.fstat(fd).st_ino, "nstype": nstype}


def report(sock, data, fds):
    cred = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    pid = int.from_bytes(cred[0:4], sys.byteorder)
    described = [describe(fd) for fd in fds]
    print(json.dumps({"pid": os.getpid(), "peerPid": pid, "data": data.decode(), "fds": described}), flush=True)
    for fd in fds:
        os.close(fd)


def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(path)
    return sock


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "receive":
        with connect(path) as sock:
            sock.send(b"hello")
            data, fds, _flags, _addr = socket.recv_fds(sock, 1024, 4)
            report(sock, data, fds)
            sock.send(b"ack")
    elif mode == "send":
        fds = [os.open(name, os.O_RDONLY) for name in sys.argv[3:]]
        with connect(path) as sock:
            socket.send_fds(sock, [b"take"], fds)
            for fd in fds:
                os.close(fd)
            data, got, _flags, _addr = socket.recv_fds(sock, 1024, 4)
            report(sock, data, got)
    elif mode == "serve":
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as server:
            server.bind(path)
            server.listen(1)
            print(json.dumps({"listening": path}), flush=True)
            conn, _ = server.accept()
            with conn:
                data, fds, _flags, _addr = socket.recv_fds(conn, 1024, 4)
                report(conn, data, fds)
                conn.send(b"ack")
            os.unlink(path)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""prom_hostile.py - bad clients against `tailbus export`, for prom_e2e.sh.

   prom_hostile.py HOST PORT CONNECTIONS

While one address (IDLE_FROM) tries to hold CONNECTIONS idle connections
open (the exporter keeps PER_IP of them at most and closes the rest), and
another (BAD_FROM) runs a slow-loris client (one header byte at a time) and
clients that never read their responses, it sends malformed requests
(garbage, a bad request line, binary bytes, a header block of 1 MiB, a
POST, a bad path) and checks after each that a well-formed GET of /metrics
from a fresh connection of HOST's own address is answered 200 within
ANSWER_SECONDS. Prints one line per check; exits 1 if any failed.
"""
import resource
import socket
import sys
import threading
import time

ANSWER_SECONDS = 5
HUGE_HEADER = 1 << 20
PER_IP = 256  # tools/export.c's PER_IP_LIMIT
IDLE_FROM = ('127.0.0.2', 0)  # other addresses of the loopback
BAD_FROM = ('127.0.0.3', 0)


def get_metrics(host, port):
    with socket.create_connection((host, port), timeout=ANSWER_SECONDS) as s:
        s.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
        data = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.split(b'\r\n', 1)[0]


def send_raw(host, port, payload):
    """Send bytes, return the status line (b'' when the server just closed)."""
    try:
        with socket.create_connection((host, port), timeout=ANSWER_SECONDS) as s:
            try:
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server may refuse a huge header before reading it all
            data = s.recv(4096)
            return data.split(b'\r\n', 1)[0]
    except OSError:
        return b''


def closed_by_server(s):
    """Whether the server closed s (EOF waiting), without blocking."""
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) == b''
    except BlockingIOError:
        return False
    except OSError:
        return True


def slow_loris(host, port, stop):
    s = socket.create_connection((host, port), source_address=BAD_FROM)
    s.sendall(b'GET /metrics HTTP/1.1\r\n')
    while not stop.is_set():
        try:
            s.sendall(b'X')
        except OSError:
            break  # the server timed it out: as it should
        time.sleep(0.5)
    s.close()


def main():
    host, port, conns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    failed = 0

    def check(name, ok):
        nonlocal failed
        print(('ok: ' if ok else 'FAILED: ') + name)
        failed += 0 if ok else 1

    idle = []
    for _ in range(conns):
        try:
            idle.append(socket.create_connection((host, port), timeout=ANSWER_SECONDS,
                                                 source_address=IDLE_FROM))
        except OSError:
            pass  # refused outright: as good as closed
    time.sleep(1)
    held = sum(1 for s in idle if not closed_by_server(s))
    check('one address holds at most %d connections (%d of %d tried)' % (PER_IP, held, conns),
          0 < held <= PER_IP)

    stop = threading.Event()
    loris = threading.Thread(target=slow_loris, args=(host, port, stop))
    loris.start()
    # a client that asks and never reads: its response waits in its socket
    for _ in range(20):
        s = socket.create_connection((host, port), source_address=BAD_FROM)
        s.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' * 50)
        idle.append(s)

    t0 = time.monotonic()
    check('answered with %d connections open' % len(idle),
          get_metrics(host, port).startswith(b'HTTP/1.1 200'))
    check('answered within %d s' % ANSWER_SECONDS, time.monotonic() - t0 < ANSWER_SECONDS)

    bad = {
        'garbage': b'\x00\xff\xfe garbage\r\n\r\n',
        'bad request line': b'GET\r\n\r\n',
        'no HTTP version': b'GET /metrics\r\n\r\n',
        'bad version': b'GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n',
        'header without colon': b'GET /metrics HTTP/1.1\r\nHost x\r\n\r\n',
        'huge header': b'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ' + b'a' * HUGE_HEADER + b'\r\n\r\n',
        'many headers': b'GET /metrics HTTP/1.1\r\n' + b'X: y\r\n' * 20000 + b'\r\n',
        'post with body': b'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello',
        'bad path': b'GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n',
    }
    # well-formed requests with odd parts: any answer will do, as long as the
    # server lives (a GET is answered before its body is read)
    odd = {
        'bad chunked body': b'GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
        'long accept': b'GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: ' + b'a;q=0,' * 4000 + b'\r\n\r\n',
        'accept of separators': b'GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: ;;;,,,=;=,q=\r\n\r\n',
    }
    for name, payload in list(bad.items()) + list(odd.items()):
        status = send_raw(host, port, payload)
        if name in bad:
            check('%s: not served as a scrape (%r)' % (name, status[:40]),
                  not status.startswith(b'HTTP/1.1 200'))
        check('%s: then a good scrape is answered' % name,
              get_metrics(host, port).startswith(b'HTTP/1.1 200'))

    stop.set()
    loris.join()
    for s in idle:
        s.close()
    check('answered after the bad clients left', get_metrics(host, port).startswith(b'HTTP/1.1 200'))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()

"""The probe's line to Trainbench: JSON lines over a loopback TCP socket.

Never the script's stdout: the script owns that. The connection is made on the
first message, so processes that import torch but train nothing (torchrun's
launcher, a shell wrapper's helpers) never appear. A forked child (a DataLoader
worker) does not write on its parent's socket.
"""
import json
import os
import socket
import sys
import threading


class Channel:
    def __init__(self, address, token, identity):
        host, _, port = address.rpartition(":")
        self._address = (host, int(port))
        self._token = token
        self._identity = identity
        self._sock = None
        self._pid = None
        self._broken = False
        self._lock = threading.Lock()

    def send(self, message):
        if self._broken:
            return
        line = (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            try:
                if self._sock is None or self._pid != os.getpid():
                    self._connect()
                self._sock.sendall(line)
            except (OSError, ValueError) as err:
                self._broken = True
                sys.stderr.write("trainbench probe: lost the connection to Trainbench (%s); measuring stops, the script goes on\n" % (err,))

    def _connect(self):
        sock = socket.create_connection(self._address, timeout=10)
        sock.settimeout(None)
        hello = dict(self._identity, type="hello", token=self._token, pid=os.getpid())
        sock.sendall((json.dumps(hello) + "\n").encode("utf-8"))
        self._sock = sock
        self._pid = os.getpid()

    def close(self):
        with self._lock:
            if self._sock is not None and self._pid == os.getpid():
                try:
                    self._sock.close()
                except OSError:
                    pass
            self._sock = None

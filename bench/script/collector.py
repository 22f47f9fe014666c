"""What the probe benches share: the collector's side of the probe's channel (a loopback socket that accepts
the probe's connections and discards what they send) and where a bench's JSON goes."""
import json
import os
import socket
import threading


def drain_server():
    """Starts the socket on a free port (daemon threads); returns its address for TB_PROBE_ADDR."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve():
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=lambda c=conn: [None for _ in iter(lambda: c.recv(1 << 16), b"")], daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return "127.0.0.1:%d" % srv.getsockname()[1]


def write_result(path, result):
    """The bench's JSON at --out (its folder made), said on stdout."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print("wrote", path)

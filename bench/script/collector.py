"""The collector's side of the probe's channel for the probe benches: a loopback socket that accepts the
probe's connections and discards what they send, as Trainbench would read it, doing nothing with it."""
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

"""The probe's line to Trainbench: JSON lines over a loopback TCP socket.

Never the script's stdout: the script owns that. The connection is made on the
first message, so processes that import torch but train nothing (torchrun's
launcher, a shell wrapper's helpers) never appear. A forked child (a DataLoader
worker) does not write on its parent's socket.

Per-step messages (step, phases, loss) are held and sent together every FLUSH_S
(issue 38): a message sent on its own wakes the reader, which the kernel tends to
run at once on the writer's core (a socket wake-up is a 'sync' one), so a fast
step paid a reader's turn (30 to 100 µs on a 2-core machine) at every step. Any
other message goes at once, after what is held, so the order is kept. A training
thread that stops stepping (an evaluation, a checkpoint) leaves what it holds
to a flusher thread, which sends it within 2 x FLUSH_S and sleeps otherwise.
"""
import json
import os
import socket
import sys
import threading
import time

PER_STEP = frozenset(("step", "phases", "loss", "collectives"))  # src-main/core/script/probe-channel.ts keeps the same set
# Below one telemetry sample (LAUNCH_TELEMETRY_MS, 200 ms): a window opened or closed by a step's arrival
# moves by less than a sample; Trainbench throttles its progress to one update per 100 ms anyway.
FLUSH_S = 0.1


class Channel:
    def __init__(self, address, token, identity):
        host, _, port = address.rpartition(":")
        self._address = (host.strip("[]"), int(port))  # an IPv6 collector comes as [addr]:port
        self._token = token
        self._identity = identity
        self._sock = None
        self._pid = None
        self._received = b""
        self._broken = False
        # Messages are encoded when sent, together: encoding them one by one, between the script's own work, is slower.
        self._encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        self._fresh_state()
        if hasattr(os, "register_at_fork"):
            import weakref

            ref = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: ref() is not None and ref()._fresh_state())

    def _fresh_state(self):
        """The lock, the held messages and the flusher: a forked child (whose copy of the lock may be held,
        and which has no flusher thread) starts them anew, and never sends what its parent held."""
        self._lock = threading.Lock()
        self._held = []
        self._held_since = 0.0
        self._due = threading.Event()  # set while messages are held: the flusher watches them
        self._watched = False  # _due is set (a plain flag: read at every step, under the lock)
        self._flusher = None

    def send(self, message, at_once=None):
        """Sends a message; a per-step one is held up to FLUSH_S unless at_once. The message is a dict, or a
        (build, args) pair whose build(*args) makes the dict, or its JSON line, when it is sent (held ones are made
        together). A (build, args) message must give at_once: its type is not looked at."""
        if self._broken:
            return
        if at_once is None:
            at_once = message.get("type") not in PER_STEP
        now = time.perf_counter()
        with self._lock:
            if not self._held:
                self._held_since = now
            self._held.append(message)
            if at_once or now - self._held_since >= FLUSH_S:
                self._flush_locked()
            elif not self._watched:
                self._watch()

    def flush(self):
        with self._lock:
            if self._held:
                self._flush_locked()

    def _flush_locked(self):
        held, self._held = self._held, []
        if self._broken:
            return
        try:
            data = "".join([self._line(m) + "\n" for m in held]).encode("utf-8")
            if self._sock is None or self._pid != os.getpid():
                self._connect()
            self._sock.sendall(data)
        except Exception as err:  # the socket (OSError), a value JSON cannot hold (ValueError), a message that could not be made
            self._broken = True
            sys.stderr.write("trainbench probe: lost the connection to Trainbench (%s); measuring stops, the script goes on\n" % (err,))

    def _line(self, message):
        """A held message as its JSON line: a dict, or a (build, args) pair whose build makes a dict or the line itself."""
        if type(message) is not dict:
            message = message[0](*message[1])
        return message if type(message) is str else self._encode(message)

    def _watch(self):
        """Under the lock: held messages are sent by the flusher thread if the training thread sends nothing more."""
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_when_idle, name="trainbench-probe-flush", daemon=True)
            self._flusher.start()
        self._watched = True
        self._due.set()

    def _flush_when_idle(self):
        """Sleeps until messages are held, then sends them once they are 2 x FLUSH_S old (the training thread sends
        them after FLUSH_S while it steps, so this one wakes at most every 2 x FLUSH_S and mostly finds nothing)."""
        due, lock = self._due, self._lock  # the parent's: a forked child makes its own, and has no flusher
        while True:
            due.wait()
            with lock:
                age = time.perf_counter() - self._held_since
                if not self._held or age >= 2 * FLUSH_S:
                    if self._held:
                        self._flush_locked()
                    self._watched = False
                    due.clear()
                    continue
            time.sleep(2 * FLUSH_S - age)

    def exchange(self, t0):
        """One clock probe (issue 40): sent at once, after what is held; answers the collector's (t1, t2), its clock
        on receipt and on reply, or None when no answer came within a second (the job goes on unmeasured by it)."""
        with self._lock:
            self._held.append({"type": "clock", "t0": t0})
            self._flush_locked()
            sock = self._sock
            if self._broken or sock is None or self._pid != os.getpid():
                return None
            try:
                sock.settimeout(1.0)
                while b"\n" not in self._received:
                    chunk = sock.recv(4096)
                    if not chunk or len(self._received) > 65536:  # closed, or not answers: stop asking
                        return None
                    self._received += chunk
                line, _, self._received = self._received.partition(b"\n")
                reply = json.loads(line.decode("utf-8"))
                return (float(reply["t1"]), float(reply["t2"])) if reply.get("t0") == t0 else None
            except (OSError, ValueError, KeyError, TypeError):
                return None
            finally:
                try:
                    sock.settimeout(None)
                except OSError:
                    pass

    def _connect(self):
        sock = socket.create_connection(self._address, timeout=10)
        sock.settimeout(None)
        hello = dict(self._identity, type="hello", token=self._token, pid=os.getpid())
        sock.sendall((json.dumps(hello) + "\n").encode("utf-8"))
        self._sock = sock
        self._pid = os.getpid()
        self._received = b""  # the collector's answers to clock probes, read only by exchange()

    def close(self):
        with self._lock:
            if self._held:
                self._flush_locked()
            if self._sock is not None and self._pid == os.getpid():
                try:
                    self._sock.close()
                except OSError:
                    pass
            self._sock = None

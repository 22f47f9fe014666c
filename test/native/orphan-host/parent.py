"""Starts the engine host as its supervisor would (a JSON channel on fd 3), starts a training run, and after
a few step events stops reading: shutdown(SHUT_RD) makes the host's next send fail with EPIPE while its own
reads see no end, the order a killed supervisor's last moment can take. Prints how the host ended, as JSON."""
import json
import os
import socket
import subprocess
import sys
import time

node, entry, params_path, events_before, wait_s = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
with open(params_path, encoding="utf-8") as f:
    params = json.load(f)

ours, theirs = socket.socketpair()
fd = theirs.fileno()


def as_fd_3():
    os.dup2(fd, 3)
    os.set_inheritable(3, True)


env = dict(os.environ, NODE_CHANNEL_FD="3", NODE_CHANNEL_SERIALIZATION_MODE="json")
host = subprocess.Popen([node, entry], env=env, preexec_fn=as_fd_3, close_fds=False, stdin=subprocess.DEVNULL)
theirs.close()
lines = ours.makefile("rb")


def message():
    line = lines.readline()
    if not line:
        raise SystemExit(json.dumps({"error": "the host closed its channel", "code": host.wait()}))
    return json.loads(line)


while message().get("kind") != "ready":
    pass
ours.sendall((json.dumps({"kind": "request", "id": 1, "method": "train.run", "params": params}) + "\n").encode())
events = 0
while events < events_before:
    m = message()
    if m.get("kind") == "reply":
        raise SystemExit(json.dumps({"error": "the run ended before the channel was cut", "reply": m}))
    events += m.get("kind") == "event"
ours.shutdown(socket.SHUT_RD)
cut = time.monotonic()
try:
    code = host.wait(timeout=wait_s)
    print(json.dumps({"exited": True, "seconds": time.monotonic() - cut, "code": code}))
except subprocess.TimeoutExpired:
    host.kill()
    host.wait()
    print(json.dumps({"exited": False, "seconds": time.monotonic() - cut}))

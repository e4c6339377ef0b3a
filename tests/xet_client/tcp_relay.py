"""A TCP relay on 127.0.0.1 in front of one server: the network face of a
host a test kills while bytes are on their way (test_download_tier.py: the
link between edge endpoints and a fleet tier host). It passes bytes both
ways as they come. `freeze_after(n)`: once some connection has passed n
bytes of answer, every answer waits (`frozen` is set), so the test knows a
client is in the middle of a body. `cut()`: the host is gone with its
kernel, as when a machine dies: the bytes held are dropped, every
connection is reset, and new ones are refused. (Killing the server's
processes alone would not do: their kernel still sends what they wrote,
a few MiB on loopback.)"""

import socket
import struct
import threading


class Relay:
    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.freeze_at = None  # answer bytes on one connection that freeze the relay
        self.frozen = threading.Event()
        self.thawed = threading.Event()
        self.thawed.set()
        self.answered = 0  # answer bytes passed, all connections
        self.live = set()  # sockets of both sides
        self.gone = False
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze_after(self, n):
        with self.lock:
            self.freeze_at = n
            self.thawed.clear()

    def cut(self):
        with self.lock:
            self.gone = True
            live = list(self.live)
        self.listener.close()
        for s in live:
            _reset(s)
        self.thawed.set()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            _reset(client)
            return
        server.settimeout(None)
        with self.lock:
            if self.gone:
                _reset(client)
                _reset(server)
                return
            self.live.update((client, server))
        threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
        self._pump(server, client, True)

    def _pump(self, src, dst, answers):
        passed = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if answers:
                    with self.lock:
                        if self.freeze_at is not None and passed + len(data) >= self.freeze_at:
                            self.frozen.set()
                    if self.frozen.is_set():
                        self.thawed.wait()
                    if self.gone:
                        break
                    passed += len(data)
                    with self.lock:
                        self.answered += len(data)
                dst.sendall(data)
        except OSError:
            pass
        # One side closed: so is the other, as it was (the relay never
        # completes an answer on its own).
        with self.lock:
            self.live.discard(src), self.live.discard(dst)
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _reset(s):
    """Closes a socket with a reset (no FIN, nothing more sent), waking a
    thread blocked reading it."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    s.close()

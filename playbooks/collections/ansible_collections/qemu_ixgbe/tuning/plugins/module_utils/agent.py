# -*- coding: utf-8 -*-
# Host side of the guest image's serial-console command agent.
#
# The guest agent (scripts/guest/guest-agent in this project) reads request
# lines on ttyS0: "P <token>" (ping), "D <base64>" (a chunk of a script),
# "X <id> <seconds>" (run it) and "G <id>" (report again). It answers
#   @@AGENT-RESULT <id> <rc> <timed-out> <bytes> <md5>@@
#   <output as base64 lines>
#   @@AGENT-DONE <id>@@
# This client talks to it through a unix socket chardev (libvirt
# <serial type='unix'> in bind mode) and checks length and md5 of every
# result, asking again when console noise damaged one.
from __future__ import annotations

import base64
import hashlib
import os
import re
import socket
import time
import uuid
from typing import Dict, List, Optional, Tuple

_B64 = re.compile(r"^[A-Za-z0-9+/=]+$")


class AgentError(RuntimeError):
    pass


class Agent(object):
    def __init__(self, path: str, connect_timeout: float = 120.0):
        self.path = path
        self.buf = b""
        self.transcript: List[str] = []
        deadline = time.monotonic() + connect_timeout
        last_err: Optional[Exception] = None
        self.sock: Optional[socket.socket] = None
        while time.monotonic() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                self.sock = s
                break
            except OSError as e:
                last_err = e
                s.close()
                time.sleep(0.5)
        if self.sock is None:
            raise AgentError("cannot connect to the VM console socket %s: %s" % (path, last_err))

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _socket(self) -> socket.socket:
        if self.sock is None:
            raise AgentError("the connection to %s is closed" % self.path)
        return self.sock

    def _send(self, line: str) -> None:
        self._socket().sendall(line.encode("ascii") + b"\n")

    def _lines(self, deadline: float):
        """Yield console lines (without CR/LF) until the deadline."""
        sock = self._socket()
        while True:
            while b"\n" in self.buf:
                raw, self.buf = self.buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace").rstrip("\r")
                self.transcript.append(line)
                del self.transcript[:-200]
                yield line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            sock.settimeout(min(remaining, 1.0))
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise AgentError("the VM console closed (did the guest stop?)")
            self.buf += data

    def wait_ready(self, timeout: float) -> float:
        """Ping until the agent answers; return seconds waited."""
        start = time.monotonic()
        deadline = start + timeout
        token = uuid.uuid4().hex[:12]
        next_ping = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() >= next_ping:
                self._send("P %s" % token)
                next_ping = time.monotonic() + 2.0
            for line in self._lines(min(deadline, next_ping)):
                if "@@AGENT-PONG %s@@" % token in line:
                    return time.monotonic() - start
        raise AgentError("the guest agent did not answer within %.0f s; last console lines:\n%s"
                         % (timeout, "\n".join(self.transcript[-20:])))

    def _read_result(self, ident: str, deadline: float) -> Optional[Tuple[int, bool, bytes]]:
        header = re.compile(r"@@AGENT-RESULT %s (\d+) ([01]) (\d+) ([0-9a-f]{32})@@" % ident)
        got = None
        body: List[str] = []
        for line in self._lines(deadline):
            m = header.search(line)
            if m:
                got = m
                body = []
                continue
            if "@@AGENT-DONE %s@@" % ident in line:
                if got is None:
                    continue
                try:
                    data = base64.b64decode("".join(body))
                except ValueError:
                    return None
                if len(data) != int(got.group(3)) or \
                        hashlib.md5(data).hexdigest() != got.group(4):
                    return None
                return int(got.group(1)), got.group(2) == "1", data
            if "@@AGENT-UNKNOWN %s@@" % ident in line:
                raise AgentError("the agent lost the result of command %s" % ident)
            if got is not None and _B64.match(line.strip()):
                body.append(line.strip())
        raise AgentError("no result from the guest within the time limit; last console lines:\n%s"
                         % "\n".join(self.transcript[-20:]))

    def run(self, script: str, timeout: int = 60) -> Dict[str, object]:
        ident = uuid.uuid4().hex[:10]
        encoded = base64.b64encode(script.encode("utf-8")).decode("ascii")
        for i in range(0, len(encoded), 76):
            self._send("D %s" % encoded[i:i + 76])
        self._send("X %s %d" % (ident, int(timeout)))
        deadline = time.monotonic() + timeout + 30
        for _attempt in range(4):
            res = self._read_result(ident, deadline)
            if res is not None:
                rc, timed_out, data = res
                return {"rc": rc, "timed_out": timed_out,
                        "stdout": data.decode("utf-8", "replace")}
            self._send("G %s" % ident)
        raise AgentError("the result of command %s arrived damaged 4 times" % ident)


def wait_for_socket(path: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AgentError("console socket %s did not appear within %.0f s" % (path, timeout))
        time.sleep(0.2)

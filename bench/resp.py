"""The Redis protocol for the bench scripts: commands out, replies in, over plain sockets."""

import socket


def resp(*args):
    """A command in the Redis protocol; bytes go as they are, anything else as its text."""
    out = b"*%d\r\n" % len(args)
    for arg in args:
        arg = arg if isinstance(arg, bytes) else str(arg).encode()
        out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    return out


def connect(port):
    """A connection to the server on 127.0.0.1:`port`, replies sent at once."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Reader:
    """A minimal RESP2 reader over one socket."""

    def __init__(self, sock):
        self.sock, self.buffer = sock, b""

    def line(self):
        while b"\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def exactly(self, n):
        while len(self.buffer) < n + 2:
            self.buffer += self.sock.recv(65536)
        data, self.buffer = self.buffer[:n], self.buffer[n + 2 :]
        return data

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if int(rest) < 0 else self.exactly(int(rest))
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError("bad reply %r" % line)

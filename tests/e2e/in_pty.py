#!/usr/bin/env python3
"""Run a command in a pseudo-terminal, as a user at a terminal would, for end-to-end tests of
interactive client sessions (a permission prompt only happens at a terminal).

Usage: in_pty.py SCREEN_LOG COMMAND [ARG...]

Everything the command draws is appended to SCREEN_LOG; nothing is typed. The terminal is 120
columns by 40 rows. Exits with the command's status once it exits.
"""

import fcntl
import os
import pty
import struct
import sys
import termios


def main():
    log_path, argv = sys.argv[1], sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    with open(log_path, "ab") as log:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            log.write(data)
            log.flush()
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)


if __name__ == "__main__":
    main()

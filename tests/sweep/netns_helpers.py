"""Separate hosts on one machine, for the multi-host tests: Linux network namespaces.

`Lan(hosts)` makes one network namespace per host plus one holding a bridge (the switch),
joined by a veth pair per host, with addresses of a private subnet that exist only inside
these namespaces (the machine's own network is not touched and cannot reach them). A host
given a `reach` list has routes to those hosts only (as behind a firewall). A process
runs on a host with `ip netns exec`; given a `disk`, it also gets its own mount namespace in
which that folder is bind-mounted over another path (the host's own copy of files found at
the same path on every machine). `cut`/`restore` take a host's switch port down and up;
`kill` SIGKILLs every process in a host's namespace. `close` kills what is left and deletes
the namespaces (and with them the links), whatever state the test left them in; `up` first
removes the namespaces of test processes that died without closing theirs (named by pid).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from sweep_helpers import spawn

SUBNET = "10.47.0"        # /24; .1, .2, ... in the order of the hosts
PREFIX = "gpch-"          # every namespace made here: gpch-<pid of the test process>-<host>


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30,
                          check=check)


def namespaces_unavailable() -> str | None:
    """Why this machine cannot run the multi-host tests (None: it can): not root, no `ip` or
    `unshare`, or a kernel (container) that refuses network namespaces, bridges or mounts."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("unshare", "util-linux"), ("mount", "mount")):
        if shutil.which(tool) is None:
            return f"`{tool}` is missing (Debian: apt-get install {package})"
    probe = f"{PREFIX}{os.getpid()}-probe"
    folder = tempfile.mkdtemp()
    try:
        for args in (["netns", "add", probe],
                     ["-n", probe, "link", "add", "name", "br0", "type", "bridge"],
                     ["netns", "exec", probe, "unshare", "--mount", "--propagation", "private",
                      "mount", "--bind", folder, folder]):
            done = _ip(*args, check=False)
            if done.returncode != 0:
                return f"`ip {' '.join(args)}` failed: {done.stderr.strip()}"
    finally:
        _ip("netns", "del", probe, check=False)
        os.rmdir(folder)
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _kill_all(ns: str) -> None:
    done = _ip("netns", "pids", ns, check=False)
    for pid in (int(p) for p in done.stdout.split()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def remove_orphans() -> None:
    """Delete the namespaces (and kill the processes) of test processes no longer alive."""
    listed = _ip("netns", "list", check=False).stdout.split()
    for ns in listed:
        found = re.fullmatch(rf"{PREFIX}(\d+)-\S+", ns)
        if found and not _pid_alive(int(found.group(1))):
            _kill_all(ns)
            _ip("netns", "del", ns, check=False)


class Lan:
    """One namespace per host on a bridge (module doc); `address(host)` is its IPv4 address."""

    def __init__(self, hosts: list[str], reach: dict[str, list[str]] | None = None):
        tag = f"{PREFIX}{os.getpid()}"
        self.hosts = list(hosts)
        self.reach = reach or {}
        self.switch = f"{tag}-sw"
        self.ns = {h: f"{tag}-{h}" for h in self.hosts}
        self.port = {h: f"p{i}" for i, h in enumerate(self.hosts)}   # its end on the switch
        self._made: list[str] = []

    def address(self, host: str) -> str:
        return f"{SUBNET}.{self.hosts.index(host) + 1}"

    def up(self) -> Lan:
        remove_orphans()
        for ns in (self.switch, *self.ns.values()):
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", self.switch, "link", "add", "name", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for host, ns in self.ns.items():
            port = self.port[host]
            _ip("-n", self.switch, "link", "add", "name", port, "type", "veth", "peer",
                "name", "eth0", "netns", ns)
            _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
            prefix = 32 if host in self.reach else 24     # /32: no route but its own
            _ip("-n", ns, "addr", "add", f"{self.address(host)}/{prefix}", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            for other in self.reach.get(host, []):
                _ip("-n", ns, "route", "add", f"{self.address(other)}/32", "dev", "eth0")
        return self

    def run(self, host: str, args: list[str], log: Path, cwd: Path,
            disk: tuple[Path, Path] | None = None, env: dict[str, str] | None = None
            ) -> subprocess.Popen:
        """Start `args` on `host` (its own session); disk=(own, at): `own` is mounted at `at`
        for this process and its children only."""
        if disk is not None:
            args = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh",
                    str(disk[0]), str(disk[1]), *args]
        return spawn(["ip", "netns", "exec", self.ns[host], *args], log, cwd, env)

    def routes(self, host: str, other: str) -> bool:
        """Whether `host` has a route to `other`."""
        return _ip("-n", self.ns[host], "route", "get", self.address(other),
                   check=False).returncode == 0

    def pids(self, host: str) -> list[int]:
        done = _ip("netns", "pids", self.ns[host], check=False)
        return [int(p) for p in done.stdout.split()]

    def kill(self, host: str) -> None:
        """SIGKILL every process of the host (as if it lost power)."""
        _kill_all(self.ns[host])

    def cut(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self.port[host], "down")

    def restore(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self.port[host], "up")

    def close(self) -> None:
        for host in self.hosts:
            if self.ns[host] in self._made:
                self.kill(host)
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made.clear()

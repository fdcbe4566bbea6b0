"""A Ray cluster on this machine, listening on loopback only (for the grids of Section 5).

What ``python -m clirlib reproduce --executor ray`` starts when no cluster address is
given, and what ``tests/test_executors.py`` starts with two nodes: ``ray start --head``
plus, for a second node, ``ray start --address=...``, each with its declared CPUs and in
its own session (``setsid``), so that a node's processes (GCS, raylet, agents) share one
process group whose id is the PID of that ``ray start``. :meth:`LocalCluster.stop`
signals exactly those recorded groups, then the PIDs found as children of their
processes (Ray's workers, which move to groups of their own); never ``ray stop``, never a
process name. Every port is given explicitly (free loopback ports), and
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes Ray keep 127.0.0.1 instead of replacing it
with the machine's reachable address (the joining node gets the same through
``JOIN_CLI``). Nothing is reachable from another machine, so token authentication is off.
:func:`listening` lists the TCP addresses a set of processes listens on (from ``/proc``), so
a test can check that every one of a cluster's sockets is on loopback.

:func:`probe` checks an address before Ray is asked to join it: one TCP connect with a
short timeout. ``ray.init(address=...)`` on an address where nothing listens retries for
many minutes and logs only to files; the probe fails in seconds with one line naming the
address.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import env
from ..validate import ConfigError

RAY = str(Path(sys.executable).with_name("ray"))
#: Ray replaces 127.0.0.1 by the machine's reachable IP unless clusters are "disabled";
#: with this it keeps loopback (single-machine clusters only, which is what a test wants).
#: Token authentication off whatever ~/.ray holds: the cluster is reachable from this machine only.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


#: ``ray`` with its "localhost means the reachable IP" rewrite turned off (for joining nodes).
#: Ray 2.60 has no public switch for it: ``ray._private.services`` is patched (pinned version).
JOIN_CLI = [sys.executable, "-c",
            "import sys, ray._private.services as s; s.resolve_ip_for_localhost = lambda host: host; "
            "from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"]



def short_temp_dir() -> tempfile.TemporaryDirectory:
    """A new folder for a :class:`LocalCluster`'s files, right under the system's temporary
    folder: Ray's socket paths must stay under 108 bytes, which deeper folders (pytest's
    ``tmp_path``, more so under pytest-xdist) exceed."""
    return tempfile.TemporaryDirectory(prefix="clirlib-ray-")


#: Seconds :func:`probe` waits for a Ray head to accept a connection.
PROBE_SECONDS = 5.0


#: HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _answers_grpc(conn: socket.socket) -> bool:
    """Whether the server on ``conn`` answers HTTP/2's preface with a SETTINGS frame on stream 0,
    as every gRPC server does (a Ray head's GCS and Ray client server are gRPC): another
    program on the port (a web server, a dashboard) answers otherwise or not at all."""
    conn.sendall(_H2_PREFACE)
    got = b""
    while len(got) < 9:  # a frame header: length (3 bytes), type, flags, stream id (4)
        chunk = conn.recv(9 - len(got))
        if not chunk:
            return False
        got += chunk
    return got[3] == 0x04 and int.from_bytes(got[5:9], "big") & 0x7FFFFFFF == 0


def probe(address: str, timeout: float = PROBE_SECONDS, option: str = "--address") -> None:
    """Raise ``ConfigError`` (one line naming ``option`` and ``address``) unless a TCP
    connection to the Ray head at ``address`` (``host:port``) opens within ``timeout``
    seconds and the server there answers as a gRPC server does (:func:`_answers_grpc`; not
    checked under ``RAY_USE_TLS``, whose servers expect TLS first): another program on that
    port would have Ray retry for minutes. Ray's ``auto`` / ``local`` are left to Ray."""
    try:
        hp = env.check_address(address, option)
    except ValueError as e:
        raise ConfigError(option, str(e).split(": ", 1)[-1]) from None
    if hp is None:
        return
    host, port = hp
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            if not env.ray_tls() and not _answers_grpc(conn):
                raise ConfigError(option, f"{address} accepts connections but does not answer as a Ray head "
                                          f"(gRPC): another program has that port? Give the head's address "
                                          f"(`ray start --head` prints it)")
    except socket.gaierror as e:
        raise ConfigError(option, f"{address}: unknown host {host!r} ({e.strerror})") from None
    except (TimeoutError, socket.timeout):  # no connection, or no answer to the preface, within the timeout
        raise ConfigError(option, f"no Ray head answers at {address} (no answer within {timeout:g} s); "
                                  f"start one with `ray start --head --port={port}` or give its address") from None
    except OSError as e:
        raise ConfigError(option, f"no Ray head answers at {address} ({e.strerror or e}); start one with "
                                  f"`ray start --head --port={port}` or give its address") from None


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                out.add(target[8:-1])
    except OSError:
        pass
    return out


def _hex_address(text: str, v6: bool) -> str:
    addr, port = text.split(":")
    raw = bytes.fromhex(addr)
    if v6:  # four little-endian 32-bit words
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
        return f"[{socket.inet_ntop(socket.AF_INET6, raw)}]:{int(port, 16)}"
    return f"{socket.inet_ntop(socket.AF_INET, raw[::-1])}:{int(port, 16)}"


def listening(pids: list[int]) -> list[str]:
    """``host:port`` of every TCP socket in the LISTEN state that the processes ``pids``
    hold (Linux ``/proc/net/tcp`` and ``tcp6``), sorted."""
    inodes = set().union(*(_socket_inodes(p) for p in pids)) if pids else set()
    out = set()
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and cols[9] in inodes:  # 0A: TCP_LISTEN
                out.add(_hex_address(cols[1], v6))
    return sorted(out)


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _node_ports() -> tuple[list[str], dict[str, int]]:
    """Command-line flags for a node's ports, and the agents' ports by port-file name."""
    # optional dependency (the `ray` extra): only when a cluster is started
    from ray._raylet import (DASHBOARD_AGENT_LISTEN_PORT_NAME, METRICS_AGENT_PORT_NAME, METRICS_EXPORT_PORT_NAME,
                             RUNTIME_ENV_AGENT_PORT_NAME)

    p = free_ports(6)
    flags = [f"--node-manager-port={p[0]}", f"--object-manager-port={p[1]}",
             f"--dashboard-agent-grpc-port={p[2]}", f"--dashboard-agent-listen-port={p[3]}",
             f"--runtime-env-agent-port={p[4]}", f"--metrics-export-port={p[5]}"]
    return flags, {METRICS_AGENT_PORT_NAME: p[2], DASHBOARD_AGENT_LISTEN_PORT_NAME: p[3],
                   RUNTIME_ENV_AGENT_PORT_NAME: p[4], METRICS_EXPORT_PORT_NAME: p[5]}


def _local_gpus() -> int:
    """The GPUs torch sees on this machine (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


class LocalCluster:
    """``with LocalCluster(tmp, [1, 1]) as c: ray.init(c.address)``: two nodes with 1 CPU
    each, Ray's files under ``tmp``. Set :data:`LOOPBACK_ENV` in the driver before it
    imports ray."""

    def __init__(self, tmp: Path, cpus: list[int], timeout: float = 120.0):
        self.tmp, self.cpus, self.timeout = Path(tmp), cpus, timeout
        # the head offers this machine's GPUs (as a serial run here would use them), the other
        # nodes none: they run on the same machine and would count the same GPUs again
        self.gpus = _local_gpus()
        self.groups: list[int] = []  # process-group ids = PIDs of our `ray start`s
        self.address = ""

    def env(self) -> dict[str, str]:
        return {**env.snapshot(), **LOOPBACK_ENV}

    def _start(self, args: list[str], log: Path, extra_env: dict[str, str], cmd: list[str] | None = None) -> None:
        # The raylet gives its agents a hard-coded 15 s to publish their ports in files of
        # the session dir (ray/util/port_persistence.h) and aborts otherwise; on a loaded
        # 2-core machine importing the dashboard agent alone takes longer. The ports are
        # fixed here, so the test publishes them itself (with Ray's own persist_port) under
        # a node id it chooses; the agents later write the same numbers.
        from ray._raylet import persist_port  # optional dependency (the `ray` extra), as above

        flags, agent_ports = _node_ports()
        node_id = os.urandom(28).hex()
        env = {**self.env(), **extra_env, "RAY_OVERRIDE_NODE_ID_FOR_TESTING": node_id}
        with open(log, "w") as out:
            proc = subprocess.Popen([*(cmd or [RAY]), "start", *args, *flags], stdout=out, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, cwd=self.tmp)
            self.groups.append(proc.pid)
            latest, deadline = self.tmp / "ray" / "session_latest", time.time() + self.timeout
            while not latest.exists() and proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            if latest.exists():
                for name, port in agent_ports.items():
                    persist_port(str(latest.resolve()), node_id, name, port)
            rc = proc.wait(max(1.0, deadline - time.time()))
        if rc != 0:
            raise RuntimeError(f"ray start failed (exit {rc}); see {log}: {log.read_text()[-2000:]}")

    def __enter__(self) -> "LocalCluster":
        gcs, client = free_ports(2)
        self.address = f"127.0.0.1:{gcs}"
        common = ["--disable-usage-stats", "--temp-dir", str(self.tmp / "ray")]
        # The Ray Client server exists only with the ray[client] extras (grpcio); core Ray,
        # which requirements.txt pins, refuses the option. Where it exists, a free port, not
        # its fixed default 10001.
        client_port = [f"--ray-client-server-port={client}"] if importlib.util.find_spec("grpc") else []
        try:
            self._start(["--head", "--node-ip-address=127.0.0.1", f"--port={gcs}", f"--num-cpus={self.cpus[0]}",
                         f"--num-gpus={self.gpus}", "--include-dashboard=false", *client_port, *common],
                        self.tmp / "head.log", {})
            for i, n in enumerate(self.cpus[1:], start=1):
                # A joining node refuses to start with clusters "disabled", and with them
                # enabled `ray start` rewrites a 127.0.0.1 head address into the machine's
                # reachable IP, where the head does not listen; JOIN_CLI keeps the address
                # as given, and the node takes the IP it reaches the head from: 127.0.0.1.
                self._start([f"--address={self.address}", f"--num-cpus={n}", "--num-gpus=0", *common],
                            self.tmp / f"node{i}.log", {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"}, JOIN_CLI)
        except BaseException:
            self.stop()
            raise
        return self

    def processes(self) -> list[int]:
        """Every PID of the cluster: the members of our process groups and their children."""
        out = subprocess.run(["ps", "-eo", "pid=,pgid="], capture_output=True, text=True).stdout
        members = [int(a) for a, g in (line.split() for line in out.splitlines() if line.strip())
                   if int(g) in self.groups]
        return sorted(set(members) | set(self.children()))

    def children(self) -> list[int]:
        """PIDs whose parent is one of our node processes: Ray's workers, which put
        themselves in process groups of their own (setpgrp)."""
        out = subprocess.run(["ps", "-eo", "pid=,ppid=,pgid="], capture_output=True, text=True).stdout
        rows = [tuple(map(int, line.split())) for line in out.splitlines() if line.strip()]
        pgid = {pid: g for pid, _, g in rows}
        return [pid for pid, ppid, g in rows if g not in self.groups and pgid.get(ppid) in self.groups]

    def stop(self) -> None:
        workers = self.children() if self.groups else []
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for g in reversed(self.groups):
                try:
                    os.killpg(g, sig)
                except ProcessLookupError:
                    pass
            for pid in workers:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if sig == signal.SIGTERM:
                deadline = time.time() + 10
                while time.time() < deadline and any(_group_alive(g) for g in self.groups):
                    time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        self.stop()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False

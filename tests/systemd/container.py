"""A booted Debian 12 with a real systemd as PID 1, for the package as an
admin runs it (tests/systemd/test_package.py).

The root is made once per machine with debootstrap (minbase, systemd, dbus
and the packages the tests install from it, so that apt takes them from
the root rather than the network) and kept in a cache; each test boots it
with systemd-nspawn --volatile=overlay: the cached tree stays read-only
under a tmpfs, so whatever a test does is gone when the container stops,
and the next boot starts from the same bytes. This machine need not run
systemd itself: nspawn is only asked not to register with machined and to
stay in the caller's cgroup (--register=no --keep-unit). The container
shares the host's network, so a service in it listens on the host's
loopback, and the host's stand-ins (the Hub, PostgreSQL) are reachable on
127.0.0.1.

Commands run inside through nsenter into every namespace of the
container's PID 1, with a clean environment.
"""

import hashlib
import os
import shutil
import signal
import subprocess
import time

CACHE = os.environ.get("DEDUPD_SYSTEMD_ROOT_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dedupd", "systemd-roots")
SUITE = "bookworm"
BASE = ["systemd", "systemd-sysv", "dbus"]
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
       "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "TERM": "dumb", "DEBIAN_FRONTEND": "noninteractive",
       "HOME": "/root"}


class ContainerError(AssertionError):
    pass


def mirror():
    """The Debian mirror this machine's apt uses (deb822 or one-line form),
    or DEDUPD_DEBIAN_MIRROR."""
    if os.environ.get("DEDUPD_DEBIAN_MIRROR"):
        return os.environ["DEDUPD_DEBIAN_MIRROR"]
    import glob
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) + ["/etc/apt/sources.list"]:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split()
            if line.startswith("URIs:") and len(words) > 1 and "security" not in words[1]:
                return words[1]
            if words[:1] == ["deb"] and len(words) > 2 and "security" not in line:
                return words[2] if not words[1].startswith("[") else words[3]
    return "http://deb.debian.org/debian"


def real_package(name):
    """`name`, or the package that provides it when it is virtual (debootstrap
    takes only real ones: libspdlog1.10-fmt9 is libspdlog1.10's)."""
    shown = subprocess.run(["apt-cache", "show", "--no-all-versions", name], capture_output=True, text=True)
    if shown.returncode == 0 and shown.stdout.strip():
        return name
    out = subprocess.run(["apt-cache", "showpkg", name], capture_output=True, text=True).stdout
    providers = out.split("Reverse Provides:", 1)[1].split() if "Reverse Provides:" in out else []
    if not providers:
        raise ContainerError("no package is or provides %s (apt-cache showpkg)" % name)
    return providers[0]


def deb_depends(deb):
    """The real packages a .deb depends on (the first of each alternative)."""
    out = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True).stdout
    names = []
    for item in out.split(","):
        first = item.split("|")[0].strip()
        if first:
            names.append(real_package(first.split()[0].split(":")[0]))
    return names


def die_with_parent():
    """In the child before exec: SIGKILL when the test process ends. A
    debootstrap outliving a killed test went on writing into the root the
    next run was removing, and left /proc mounted in it."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def remove_unfinished(path):
    """A root a debootstrap did not finish: what it mounted inside (/proc,
    while it configures packages) unmounted first, deepest first, or the
    removal fails on every file of /proc and the next debootstrap with it."""
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].replace("\\040", " ") for line in f]
    inside = sorted((m for m in points if m == path or m.startswith(path + "/")), key=len, reverse=True)
    for m in inside:
        subprocess.run(["umount", "--lazy", m], check=False)
    shutil.rmtree(path, ignore_errors=True)
    if os.path.exists(path):
        raise ContainerError("cannot remove the unfinished root %s (still mounted inside: %s)" % (path, inside))


def cached_root(packages, log):
    """The root with BASE and `packages` installed, made on first use:
    (path, seconds it took now, 0 when cached)."""
    packages = sorted(set(BASE) | set(packages))
    key = hashlib.sha256(("%s %s" % (SUITE, " ".join(packages))).encode()).hexdigest()[:16]
    root = os.path.join(CACHE, "%s-%s" % (SUITE, key))
    os.makedirs(CACHE, exist_ok=True)
    import fcntl
    with open(root + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one debootstrap per root at a time
        if os.path.exists(os.path.join(root, ".complete")):
            return root, 0.0
        remove_unfinished(root + ".tmp")
        t0 = time.monotonic()
        cmd = ["debootstrap", "--variant=minbase", "--include=" + ",".join(packages), SUITE, root + ".tmp", mirror()]
        with open(log, "w") as f:
            r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        if r.returncode != 0:
            with open(log) as f:
                tail = f.read()[-3000:]
            raise ContainerError("debootstrap failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), tail))
        # What apt downloaded is in the root already: the cache need not keep
        # the archives too.
        for d in ("var/cache/apt/archives",):
            for name in os.listdir(os.path.join(root + ".tmp", d)):
                if name.endswith(".deb"):
                    os.remove(os.path.join(root + ".tmp", d, name))
        open(os.path.join(root + ".tmp", ".complete"), "w").close()
        shutil.rmtree(root, ignore_errors=True)
        os.rename(root + ".tmp", root)
        return root, time.monotonic() - t0


class Container:
    """One boot of a cached root; `stop` (or the end of the test process,
    through nspawn's own death) ends it."""

    def __init__(self, root, name, log):
        self.root, self.name, self.log = root, name, log
        self.out = open(log, "w")
        # nspawn's own terminal handling needs none: its console is a log.
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "-D", root, "--boot", "--register=no", "--keep-unit",
             "--volatile=overlay", "--machine=" + name, "--console=passive"],
            stdin=subprocess.DEVNULL, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        self.leader = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            if self.proc.poll() is not None:
                raise ContainerError("systemd-nspawn exited (%s):\n%s" % (self.proc.returncode, self.console()))
            self.leader = self.leader or self._find_leader()
            if self.leader:
                r = self.run("systemctl", "is-system-running", "--wait", check=False, timeout=60)
                state = r.stdout.strip()
                if state in ("running", "degraded"):
                    if state == "degraded":
                        failed = self.run("systemctl", "--failed", "--no-legend", check=False).stdout
                        raise ContainerError("the container booted degraded:\n" + failed)
                    break
            time.sleep(0.1)
        else:
            raise ContainerError("the container did not boot in 60 s:\n" + self.console())
        self.boot_seconds = time.monotonic() - t0

    def _find_leader(self):
        """The container's PID 1: nspawn's child running systemd."""
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            return None
        for pid in kids:
            try:
                if open("/proc/%d/comm" % pid).read().strip() == "systemd":
                    return pid
            except OSError:
                pass
        return None

    def console(self):
        self.out.flush()
        with open(self.log, errors="replace") as f:
            return f.read()[-4000:]

    def run(self, *args, check=True, input=None, timeout=300, env=None):
        """A command inside, as root: CompletedProcess (text)."""
        full_env = dict(ENV, **(env or {}))
        cmd = ["nsenter", "-t", str(self.leader), "-a", "--", "env", "-i"]
        cmd += ["%s=%s" % kv for kv in full_env.items()] + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, input=input, timeout=timeout)
        if check and r.returncode != 0:
            raise ContainerError("in the container: %s -> %d\n%s%s" % (" ".join(args), r.returncode, r.stdout[-3000:],
                                                                         r.stderr[-3000:]))
        return r

    def sh(self, script, **kw):
        return self.run("sh", "-ec", script, **kw)

    def path(self, inside):
        """The host's path of a file inside the running container."""
        return "/proc/%d/root%s" % (self.leader, inside)

    def put(self, host_file, inside, mode=0o644):
        shutil.copyfile(host_file, self.path(inside))
        os.chmod(self.path(inside), mode)

    def write(self, inside, text, mode=0o644):
        with open(self.path(inside), "w") as f:
            f.write(text)
        os.chmod(self.path(inside), mode)

    def journal(self, *units, since_cursor=None):
        args = ["journalctl", "--no-pager", "-o", "short-monotonic"]
        for u in units:
            args += ["-u", u]
        return self.run(*args, check=False).stdout

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.run("systemctl", "poweroff", "--no-block", check=False, timeout=20)
                self.proc.wait(30)
            except (subprocess.TimeoutExpired, ContainerError):
                pass
        if self.proc.poll() is None:
            import signal
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.out.close()

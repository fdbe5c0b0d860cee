"""clover's warm pytest worker: one per repository, interpreter and pytest setting, inside the
sandbox; every candidate runs in a fresh child forked from it.

Started as the payload of a sandbox run that keeps uid 0 of the run's user namespace (and so
the capabilities to make namespaces and mounts in it, none on the host), this process does
what a cold `python -m pytest` run does up to its first test: starts coverage.py (when the
setting measures), configures pytest with the same arguments, loads the initial conftests
and starts the session. Then it freezes its heap and serves requests, one at a time, from
the host (length-prefixed JSON on the descriptor that was stdin; answers on the one that was
stdout):

  zygote ── fork ──> C: pid 1 of a new pid namespace (the zygote forks it into one), new
                        mount, network and IPC namespaces; a fresh overlay over the
                        repository (the worker's view is its lower layer), fresh /tmp,
                        /dev/shm and /proc; writes the candidate's files; forks H; reaps,
                        and kills whatever is left when H ends (as the cold supervisor
                        does), all under the wall clock; reads the reports back without
                        following symlinks; answers
                     H: the runner: limits, its own session, uid/gid 65534 with every
                        capability gone; collects and runs the candidate's targets in the
                        forked pytest session; writes the JUnit report (pytest's plugin)
                        and the lines coverage.py saw, and sends the session record
                        (clover's plugin) through the candidate's report channel, a pipe
                        only C reads

So each candidate starts from the same state — the one a cold run has reached when it starts
collecting — and whatever it does to modules, globals or files dies with its processes. The
seccomp filter, `no_new_privs` and the session keyring of the worker (set by the sandbox
before this interpreter started) hold for every child.
"""

import contextlib
import ctypes
import gc
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 1
SANDBOX_ID = 65534

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]


def _check(r, what):
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def _mount(src, target, fstype, flags, data):
    _check(
        _libc.mount(
            src.encode() if src else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        "mount %s on %s" % (fstype or src, target),
    )


def _prctl(option, arg):
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), "prctl %d" % option)


def _read_frame(fd):
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    body = _read_exact(fd, n)
    if body is None:
        return None
    return json.loads(body)


def _read_exact(fd, n):
    parts = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def _read_available(fd):
    """What the non-blocking `fd` holds now."""
    parts = []
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not b:
            break
        parts.append(b)
    return b"".join(parts)


def _write_frame(fd, obj):
    body = json.dumps(obj, separators=(",", ":")).encode()
    data = struct.pack(">I", len(body)) + body
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _latin1(b):
    # Bytes as a JSON string, one character per byte; the host reads them back the same way.
    return b.decode("latin-1")


class HeadTail:
    """The first half of `cap` bytes of a stream and the last half, the rest counted (as the
    host keeps a cold run's streams)."""

    def __init__(self, cap):
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def push(self, b):
        self.total += len(b)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += b[:room]
            b = b[room:]
        if b and self.tail_cap:
            self.tail += b
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def answer(self):
        return {
            "head": _latin1(bytes(self.head)),
            "tail": _latin1(bytes(self.tail[-self.tail_cap :] if self.tail_cap else b"")),
            "total": self.total,
        }


class ChannelBytes:
    """The first `cap` bytes written into a report channel, the rest counted (as the host
    keeps a cold run's channel)."""

    def __init__(self, cap):
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def push(self, b):
        self.total += len(b)
        self.data += b[: max(0, self.cap - len(self.data))]

    def answer(self):
        return {"data": _latin1(bytes(self.data)), "total": self.total}


def _pytest_cov_reports_after_raise():
    """Whether the interpreter's pytest-cov writes its report when the test loop raises: an
    old-style hook wrapper (`hookwrapper=True`, before pytest-cov 5) goes on after its
    `yield` whatever the loop did; a new-style one (`wrapper=True`) is given the exception."""
    try:
        from pytest_cov.plugin import CovPlugin

        opts = getattr(CovPlugin.pytest_runtestloop, "pytest_impl", None) or {}
        return bool(opts.get("hookwrapper"))
    except Exception:
        return False


class Discard:
    """A stream read and not kept: a measured run's, once its answer is taken."""

    def push(self, b):
        pass


class Batch:
    """C's side of a mutant batch: H's events, one JSON line each. When H has collected, C
    notes the view; after each mutant's run it keeps the verdict and lets H go on only if
    the view is as it was and no process was left (else the next mutants need fresh views,
    which the host gives them, one run each)."""

    def __init__(self, zygote, control, n):
        self.zygote = zygote
        self.control = control
        self.results = [None] * n
        self.clean = None
        self.controlled = False
        # A measured run's: takes its answer when M has ended, and says whether it passed.
        self.on_measured = None
        self.stopped = False
        self.buf = b""

    def push(self, b):
        self.buf += b
        while b"\n" in self.buf and len(self.buf) < (1 << 20):
            line, self.buf = self.buf.split(b"\n", 1)
            self.event(line)
        if len(self.buf) >= (1 << 20):
            self.stop()

    def event(self, line):
        if self.stopped:
            return
        try:
            e = json.loads(line)
        except ValueError:
            return self.stop()
        if not isinstance(e, dict):
            return self.stop()
        if self.on_measured is not None and ("collected" in e or "control" in e):
            return self.stop()
        if "measured" in e:
            # Once, before any mutant: the candidate's own run has ended.
            if self.on_measured is None or self.clean is not None:
                return self.stop()
            if not all(isinstance(e.get(k), int) for k in ("measured", "cpu_us", "maxrss_kib")):
                return self.stop()
            passed = self.on_measured(e)
            self.clean = self.zygote.fingerprint()
            self.controlled = True
            return self.go() if passed else self.stop()
        if e.get("collected") and self.clean is None:
            self.clean = self.zygote.fingerprint()
            return self.go()
        if "control" in e:
            # Once, right after the collection: the unmutated run, which must pass and leave
            # the view as it was.
            if self.clean is None or self.controlled or not e["control"] or e.get("left"):
                return self.stop()
            self.controlled = True
            if self.zygote.fingerprint() != self.clean:
                return self.stop()
            return self.go()
        i = e.get("mutant")
        if not self.controlled or not isinstance(i, int) or not 0 <= i < len(self.results):
            return self.stop()
        if self.results[i] is not None or not isinstance(e.get("status"), int):
            return self.stop()
        failed = e.get("failed")
        if not isinstance(failed, list) or not all(
            isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)
            for f in failed
        ):
            return self.stop()
        # A run that could not judge its mutant leaves it to a run of its own; the view is
        # checked all the same.
        if not e.get("unjudged"):
            self.results[i] = {
                "status": e["status"],
                "timed_out": bool(e.get("timed_out")),
                "failed": failed,
                "ok": bool(e.get("ok")),
            }
        if e.get("left") or self.zygote.fingerprint() != self.clean:
            return self.stop()
        self.go()

    def go(self):
        try:
            os.write(self.control, b"1")
        except OSError:
            self.stopped = True

    def stop(self):
        self.stopped = True
        try:
            os.write(self.control, b"0")
        except OSError:
            pass


CO_NEWLOCALS = 0x0002


def _code_key(code):
    return (code.co_filename, getattr(code, "co_qualname", code.co_name), code.co_firstlineno)


class Unpatchable(Exception):
    pass


# The exit status of a mutant's run that found it could not be judged in its fork.
UNJUDGED = 93


class _MutantFinder:
    """First on `sys.meta_path` in a mutant's run whose module had not been imported when
    the fork was made: the module is imported, when the run first imports it, from the
    mutant's text, as a cold run would import it from the file the mutant replaced. The
    import is found as it would be without this finder; only a module plain Python loads
    from source can be given other text: for any other loader (pytest's assertion rewriter)
    the run ends at once, unjudged (`UNJUDGED`), and runs on its own."""

    def __init__(self, path, data, unjudged):
        # Imported before the finder is installed: an import in `find_spec` would ask it.
        import importlib.machinery

        from _clover_report import others_spec

        self.others_spec = others_spec

        self.source_loader = importlib.machinery.SourceFileLoader
        self.loader = _mutant_loader(path, data)
        self.path = path
        self.unjudged = unjudged
        # The names being looked up: a finder that imports through `sys.meta_path` itself
        # asks this one again, which then stands aside.
        self.busy = set()

    def find_spec(self, fullname, path=None, target=None):
        spec = self.others_spec(self, self.busy, fullname, path, target)
        if spec is None or not isinstance(spec.origin, str):
            return spec
        if os.path.realpath(spec.origin) != self.path:
            return spec
        if type(spec.loader) is not self.source_loader:
            self.unjudged()
        spec.loader = self.loader(fullname, spec.origin)
        return spec


def _mutant_loader(path, data):
    """The class of a source loader that reads `data` for `path`, and never a cached `.pyc`
    (which is the original's)."""
    import importlib.machinery

    class MutantLoader(importlib.machinery.SourceFileLoader):
        def get_data(self, p):
            return data if os.path.realpath(p) == path else super().get_data(p)

        def get_code(self, name):
            return self.source_to_code(data, self.path)

    return MutantLoader


def _nested(code):
    return [c for c in code.co_consts if isinstance(c, type(code))]


def _own(code):
    """The code object with the code objects it defines named instead of held, and without
    its positions: a definition's end column is its last line's, which a mutant there moves,
    and the positions of code that has already run only show in its tracebacks."""
    return code.replace(
        co_linetable=b"",
        co_consts=tuple(
            ("<code>",) + _code_key(c)[1:] if isinstance(c, type(code)) else c
            for c in code.co_consts
        ),
    )


_ORIGINALS = {}


def _compile_original(filename, source):
    """The code of a loaded file's source, compiled once per process: a mutant batch patches
    one module again and again, and compiling a large module is most of a patch's time."""
    key = (filename, source)
    code = _ORIGINALS.get(key)
    if code is None:
        code = _ORIGINALS[key] = compile(source, filename, "exec", dont_inherit=True)
    return code


def plan_patch(filename, old, new):
    """How a module already imported from `old` (source bytes) becomes one imported from
    `new`, when the two differ only inside function bodies: (old code, new code, whether the
    function's own code differs) for each function whose code differs. Anything else that
    differs (module level, a class body, a default, a decorator, the shape of the
    definitions) ran at import and raises Unpatchable."""
    old = _compile_original(filename, old)
    new = compile(new, filename, "exec", dont_inherit=True)
    out = []

    def walk(o, n, ran_at_import):
        if ran_at_import and _own(o) != _own(n):
            raise Unpatchable("code run at import differs (%s)" % _code_key(o)[1])
        olds, news = _nested(o), _nested(n)
        if len(olds) != len(news) or any(
            _code_key(a)[1:] != _code_key(b)[1:] for a, b in zip(olds, news)
        ):
            raise Unpatchable("the definitions differ")
        for co, cn in zip(olds, news):
            if co == cn:
                continue
            body = not (co.co_flags & CO_NEWLOCALS)  # a class body, run at import
            if not body:
                # A function whose free variables differ is made anew by its enclosing
                # function, whose own code then differs too: `patch` takes it only when no
                # closure of it is alive (the enclosing function has not run).
                out.append((co, cn, _own(co) != _own(cn)))
            walk(co, cn, body)

    walk(old, new, True)
    return out


class Zygote:
    def __init__(self, setup):
        self.setup = setup
        self.repo = setup["repo"]
        self.cov = None
        # Where a candidate's hit lines go (relative to the repository), when it asks.
        self.coverage_out = None
        # The only files a candidate's run measures, when it reads not all the worker does
        # (real paths; empty: nothing); `None`: all.
        self.coverage_only = None
        # A candidate's supervisor's: the upper layer of its view, and a mutant batch's pipes.
        self.upper_fd = None
        self.batch_fds = None
        # The session whose initial collection is under way (`prune_listings`).
        self.collecting = None
        # `real`'s answers: path -> real path.
        self.realpaths = {}
        # Per witnessed file (real path), its instrumented code, made once (`instrument`).
        self.instrumented = {}
        # The streams pytest writes to while it configures go nowhere (what goes wrong comes
        # back in the answer), and the channel to the host moves clear of them: no descriptor
        # pytest or a plugin duplicates now (capture, faulthandler) leads to the host.
        self.requests = os.dup(0)
        self.answers = os.dup(1)
        # The zygote's own pid namespace, for its children's after each supervisor's fork.
        self.pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)

    def warm(self):
        """What a cold run does before it collects: coverage first (as pytest-cov starts it
        before any conftest is imported), then pytest's configuration and session start."""
        import pytest  # noqa: F401
        from _pytest.config import _prepareconfig
        from _pytest.main import Session

        if self.setup.get("coveragerc"):
            self.untraced_rewrite()
        self.prune_listings()
        if self.setup.get("late"):
            return self.warm_late()
        self.ran = None
        if self.setup.get("track"):
            self.track_calls()
        self.config = _prepareconfig(list(self.setup["args"]), plugins=[self.start_coverage()])
        self.config._do_configure()
        self.session = Session.from_config(self.config)
        self.session.exitstatus = 0
        self.config.hook.pytest_sessionstart(session=self.session)
        # The files reported on, parsed as candidates name them (`parse_reported`).
        self.reporters = {}
        # Compiling runs no measured line.
        with self.untraced():
            self.compile_sources()
        self.preload()
        self.warm_patterns()
        # The files the zygote has executed: a candidate that brings its own version of one
        # (a conftest, a module the conftests imported, a mutant of the package) would not be
        # read again in the fork. When only function bodies differ and none of those functions
        # has run, the fork's functions are patched (`patch`); else such a candidate goes to
        # a worker configured per run. Each file maps to its module, which `patch` needs.
        self.note_loaded()
        self.remember_real_paths()
        self.functions = {}
        if self.ran is not None:
            import threading

            sys.setprofile(None)
            threading.setprofile(None)
        # Every worker knows its live functions: a mutant is patched into them, and so is the
        # witnessed code of the files a candidate's scoring reads (`witness`).
        self.index_functions()
        self.freeze()

    def parse_reported(self, body):
        """The files request `body` has reported on (its `coverage_only`, or every file of
        the sources), parsed here once each, after the request went to its supervisor and
        before the next supervisor is forked: later candidates' runs only map their lines
        (coverage.py parses a file anew for every report). A worker parsing every file when
        it starts parsed many that no candidate it served was scored on, and made its first
        candidate wait for all of them (0.3–0.4 s of a 0.9 s start on toolz and flask). The
        files it witnesses are instrumented here too (`instrument`), once each.

        A request that witnesses nothing and has no report, as the host writes it, is not
        decoded here."""
        witnesses = b'"witness":["' in body
        reports = (
            self.cov is not None
            and self.setup.get("report_lines")
            and b'"coverage_out":null' not in body
        )
        if not (witnesses or reports):
            return
        req = json.loads(body)
        if witnesses:
            with self.untraced():
                for name in req.get("witness") or []:
                    self.instrument(self.real(os.path.join(self.repo, name)))
        if not reports or not req.get("coverage_out"):
            return
        only = req.get("coverage_only")
        if only is None:
            files = []
            for src in self.setup.get("sources", []):
                src = os.path.join(self.repo, src)
                files += [src] if os.path.isfile(src) else []
                for d, _, names in os.walk(src):
                    files += [os.path.join(d, n) for n in names if n.endswith(".py")]
        else:
            files = [os.path.join(self.repo, f) for f in only]
        from coverage.python import PythonFileReporter

        new = sorted({self.real(f) for f in files} - self.reporters.keys())
        # Parsing runs no measured line: untraced, it takes a third less.
        with self.untraced():
            for f in new:
                try:
                    fr = PythonFileReporter(f, self.cov)
                    fr.lines()
                except Exception:
                    fr = None
                # A file that cannot be parsed is not tried again; a run parses it anew.
                self.reporters[f] = fr
        if new:
            # As the zygote's own objects: a fork's collections never walk them.
            gc.freeze()

    def instrument(self, path):
        """`path`'s witnessed code and watched lines (`_clover_report.instrument`), or why it
        cannot be had, made once per worker: the zygote makes them for the files a request
        names after the request went to its supervisor, and each later candidate's
        supervisor finds them made."""
        made = self.instrumented.get(path)
        if made is None:
            import _clover_report

            module = self.loaded.get(path)
            try:
                with open(path, "rb") as f:
                    source = f.read()
                filename = module.__file__ if module is not None else path
                code, watched, _ = _clover_report.instrument(source, filename)
                made = (source, code, watched)
            except (OSError, SyntaxError, ValueError) as e:
                made = "it cannot be instrumented: %s" % e
            self.instrumented[path] = made
        return made

    def witness(self, names):
        """C, before its runner forks: the files `names` (from the repository) are witnessed
        in the run (`_clover_report`). A loaded one's live functions are pointed at its
        instrumented code, and what the zygote measured of it (its import, before any
        candidate) counts as seen; one not loaded is instrumented when the run imports it."""
        import _clover_report

        later = {}
        for name in names:
            path = self.real(os.path.join(self.repo, name))
            made = self.instrument(path)
            if isinstance(made, str):
                entry = _clover_report._Witnessed(b"")
                entry.why = made
                _clover_report._witness[name] = entry
                continue
            source, code, watched = made
            entry = _clover_report._witness[name] = _clover_report._Witnessed(source, path)
            module = self.loaded.get(path)
            if module is None:
                later[path] = name
                continue
            if type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook":
                entry.why = "pytest rewrote its asserts"
                continue
            new = {}

            def walk(c):
                for n in _nested(c):
                    new[_code_key(n)] = n
                    walk(n)

            walk(code)
            todo = []
            for fn in self.functions.get(module.__file__, []):
                if fn.__code__.co_name.startswith("<"):
                    # A lambda or a comprehension holds no statement: nothing to witness,
                    # and its name and line may not tell it from another.
                    continue
                cn = new.get(_code_key(fn.__code__))
                if cn is None or cn.co_freevars != fn.__code__.co_freevars:
                    entry.why = "a function of it has no witnessed twin"
                    break
                todo.append((fn, cn))
            if entry.why is not None:
                continue
            module.__dict__[_clover_report.WITNESS] = entry.seen.add
            for fn, cn in todo:
                fn.__code__ = cn
            entry.watched = watched
            if self.cov is not None:
                for f, lines in self.cov._collector.data.items():
                    if self.real(f) == path:
                        for x in lines:
                            # Lines, or arcs (pairs of lines, negative at a code's edges).
                            for n in x if isinstance(x, tuple) else (x,):
                                if n > 0:
                                    entry.seen.add(n)
        if later:
            sys.meta_path.insert(0, _clover_report._witness_finder(later))

    def preload(self):
        """Imports the packages a mutant batch's worker was made for (`setup["preload"]`:
        each a package's folder or a module's file, relative to the repository), when the
        folder that holds it is on the path: the collection of each batch then finds them
        loaded instead of importing them under its profile hook. A batch measures nothing, and
        its control run (the candidate unmutated, in a fork like its mutants') must pass for
        any of its verdicts to count."""
        import importlib

        path = {os.path.realpath(p or os.getcwd()) for p in sys.path}
        for rel in self.setup.get("preload", []):
            target = os.path.join(self.repo, rel)
            parent, name = os.path.split(target)
            if name.endswith(".py"):
                name = name[:-3]
            if not name.isidentifier() or os.path.realpath(parent) not in path:
                continue
            try:
                importlib.import_module(name)
            except BaseException:
                pass

    def real(self, path):
        """`os.path.realpath(path)`, remembered. One costs a system call a component (about
        75 us in a candidate's view): a candidate's fork asked it of each file coverage.py
        saw, twice, and of each conftest, some 3-5 ms of a 60 ms run on flask and jinja2.
        The zygote's answers, remembered before its heap is frozen (`remember_real_paths`),
        hold in every candidate's view: it is an overlay of the zygote's, and C writes a
        candidate's files as files and folders, never links. (coverage.py remembers its own
        real paths of the files it measures in the same way, once per process.)"""
        r = self.realpaths.get(path)
        if r is None:
            r = self.realpaths[path] = os.path.realpath(path)
        return r

    def remember_real_paths(self):
        """The real paths a candidate's fork asks of: the files coverage.py traces or has
        measured (the loaded modules', conftests among them, `note_loaded` asked)."""
        if self.cov is not None:
            collector = self.cov._collector
            for disp in collector.should_trace_cache.values():
                if disp is not None and disp.trace:
                    self.real(disp.source_filename or disp.canonical_filename)
            for f in collector.data:
                self.real(f)

    def prune_listings(self):
        """A folder on the way to a candidate's file lists only the entries on that way.

        pytest (8 and later) collects a file argument by collecting each folder above it, down
        from the rootdir: every entry of each is made a node (its hooks asked whether to
        ignore it and what it is) and then dropped unless it is the next folder of the way or
        the file. A candidate sits beside the repository's test files, and making nodes of
        them all was a sixth of a warm run's work on flask. Here the listing of such a folder
        leaves out, while a session collects its arguments, what the session would drop:
        entries that are neither an argument, nor a folder above one, nor under a folder that
        is one. Nothing is left out when a hook that would have been asked about those entries,
        or that sees a folder's collected nodes, is not pytest's own (or clover's report,
        which reads only failed folders): a project's `pytest_collect_file` would see every
        file, as in a cold run. No entry dropped was ever collected, so no conftest or module
        of it is imported either way."""
        import _pytest.main
        import _pytest.python

        if not hasattr(_pytest.main, "Dir"):
            # pytest before 8 collects a file argument without listing its folders.
            return
        zygote = self
        for module in (_pytest.main, _pytest.python):
            listing = getattr(module, "scandir", None)
            if listing is None:
                continue

            def scandir(path, *args, _listing=listing, **kwargs):
                entries = _listing(path, *args, **kwargs)
                # The folder's collector (`Dir.collect`, `Package.collect` call this).
                keep = zygote.kept(sys._getframe(1).f_locals.get("self"))
                return entries if keep is None else [e for e in entries if keep(e.path)]

            module.scandir = scandir

    # The hooks asked about a folder's entries, or shown its collected nodes.
    LISTING_HOOKS = (
        "pytest_ignore_collect",
        "pytest_collect_directory",
        "pytest_collect_file",
        "pytest_pycollect_makemodule",
        "pytest_make_collect_report",
        "pytest_collectreport",
    )

    def kept(self, node):
        """Which entries the listing of `node`'s folder keeps (a test of an entry's path), or
        None for all: `node` is not a folder of the session collecting its arguments, or the
        folder is under one of them, or a hook of a folder's entries is not pytest's own."""
        import pathlib

        session = self.collecting
        if session is None or node is None or getattr(node, "session", None) is not session:
            return None
        try:
            # Each argument's path (pytest 8.0 and 8.1 keep them as (path, names) pairs).
            args = [
                pathlib.Path(part.path if hasattr(part, "path") else part[0])
                for part in session._initial_parts
            ]
            folder = pathlib.Path(node.path)
            hook = session.config.pluginmanager.hook
            for name in self.LISTING_HOOKS:
                for impl in getattr(hook, name).get_hookimpls():
                    module = getattr(impl.function, "__module__", None) or ""
                    if not (module.startswith("_pytest.") or module == "_clover_report"):
                        return None
        except Exception:  # noqa: BLE001 - a pytest not as expected: list everything
            return None
        if not args or any(folder == a or a in folder.parents for a in args):
            return None
        way = set(args)
        for a in args:
            way.update(a.parents)
        return lambda entry: pathlib.Path(entry) in way

    def warm_patterns(self):
        """Compiles here, once, the patterns every candidate's run would compile for itself:
        the JUnit report's escape of characters XML cannot hold (one large character class,
        about 7 ms of CPU a run on the fixture, more than the fixture's tests take) and its
        naming of test modules, and the
        globs collection matches paths against (norecursedirs, python_files, doctest's
        glob). `re` and `fnmatch` cache a compiled pattern by its text, so a run finds these
        in the cache it inherits: nothing it sees or does differs but the time. A pytest
        without one of these helpers only misses the head start."""
        try:
            from _pytest.junitxml import bin_xml_escape, mangle_test_address

            bin_xml_escape("")
            mangle_test_address("x.py::x")
        except Exception:
            pass
        try:
            from _pytest.pathlib import fnmatch_ex

            globs = []
            for name in ("norecursedirs", "python_files"):
                globs += [g for g in self.config.getini(name) if isinstance(g, str)]
            globs += self.config.getoption("doctestglob", None) or ["test*.txt"]
            probe = os.path.join(self.repo, "x")
            for g in globs:
                fnmatch_ex(g, probe)
        except Exception:
            pass

    def track_calls(self):
        """Notes each function of the repository that runs before the fork (at import, while
        pytest configures and starts the session): a mutant of one of these cannot be patched
        into the fork, whose state that function's original code helped make."""
        import threading

        root = os.path.join(os.path.realpath(self.repo), "")
        repo = os.path.join(self.repo, "")
        self.ran = ran = set()

        def profile(frame, event, arg):
            if event == "call":
                code = frame.f_code
                if code.co_filename.startswith((repo, root)):
                    ran.add(_code_key(code))

        sys.setprofile(profile)
        threading.setprofile(profile)

    def note_loaded(self):
        """The files executed so far, each mapped to its module."""
        self.loaded = {
            self.real(m.__file__): m
            for m in list(sys.modules.values())
            if isinstance(getattr(m, "__file__", None), str)
        }

    def index_functions(self):
        """Adds the live functions defined in the loaded files, by file: gathered before the
        zygote's heap is frozen, and by a batch's runner for what its collection made
        (gc.get_objects does not see frozen objects)."""
        import types

        for o in gc.get_objects():
            # `type`, not `isinstance`, which asks an object its `__class__`: a proxy (flask's
            # `LocalProxy`) would run code of the package for it, measured as the run's.
            if type(o) is types.FunctionType:
                f = o.__code__.co_filename
                if self.real(f) in self.loaded:
                    self.functions.setdefault(f, []).append(o)

    def patch(self, path, data):
        """Makes the fork run `data` in place of the loaded module at `path` by pointing
        every live function whose code differs at its new code, when only function bodies
        differ and none of those functions has run; else Unpatchable. A fresh interpreter
        importing `data` would have made the same objects but for those functions' code, so
        the candidate's run is the one it would have had (a mutant of a target's body, which
        calibrate keeps out of what runs at import, is such a change)."""
        module = self.loaded[path]
        if self.ran is None:
            raise Unpatchable("its worker did not note what ran before the fork")
        if type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook":
            raise Unpatchable("pytest rewrote its asserts")
        filename = module.__file__
        with open(path, "rb") as f:
            old = f.read()
        try:
            changes = plan_patch(filename, old, data)
        except SyntaxError as e:
            raise Unpatchable("it does not compile: %s" % e)
        todo = []
        functions = self.functions.get(filename, [])
        for co, cn, own in changes:
            key = _code_key(co)
            if own and key in self.ran:
                raise Unpatchable("%s ran before the candidate" % key[1])
            for fn in functions:
                if _code_key(fn.__code__) == key:
                    if fn.__code__.co_freevars != cn.co_freevars:
                        raise Unpatchable("a closure of %s differs" % key[1])
                    todo.append((fn, cn))
        return todo

    def warm_late(self):
        """A worker for candidates that replace files a configured worker has executed: only
        what a cold run imports before it configures pytest (pytest, its plugins, coverage.py)
        is loaded here; each run configures pytest itself, as `python -m pytest` would."""
        from importlib.metadata import entry_points

        import coverage  # noqa: F401

        for ep in entry_points(group="pytest11"):
            try:
                ep.load()
            except Exception:
                pass
        self.config = None
        self.reporters = {}
        self.loaded = {}
        self.functions = {}
        self.ran = None
        self.compile_sources()
        self.freeze()

    def start_coverage(self):
        """The plugin that starts coverage.py where pytest-cov starts it in a cold run (first
        thing when the initial conftests are about to load, after pytest and its plugins were
        imported) and, in a worker configured per run, stops it where pytest-cov does (when
        the test loop ends)."""
        import pytest

        zygote = self

        class StartCoverage:
            @pytest.hookimpl(tryfirst=True)
            def pytest_load_initial_conftests(self, early_config, parser, args):
                rc = zygote.setup.get("coveragerc")
                if rc and zygote.coverage_only != set():
                    import coverage

                    zygote.cov = coverage.Coverage(config_file=rc, data_file=None)
                    zygote.cov.start()
                    if zygote.coverage_only is not None:
                        zygote.measure_only()

            @pytest.hookimpl(wrapper=True)
            def pytest_collection(self, session):
                zygote.collecting = session
                try:
                    return (yield)
                finally:
                    zygote.collecting = None

            @pytest.hookimpl(wrapper=True)
            def pytest_runtestloop(self, session):
                try:
                    return (yield)
                finally:
                    if zygote.config is None and zygote.cov is not None:
                        zygote.stop_coverage()

        return StartCoverage()

    def stop_coverage(self, report=True):
        """Stops measuring; with `report`, saves and writes what was measured, where a cold
        run's pytest-cov does."""
        self.cov.stop()
        if not report:
            return
        import warnings

        from coverage.exceptions import CoverageWarning

        # pytest-cov's test loop makes coverage.py's warnings (say, that no data was
        # collected: a run that measures only a file nothing imported) show once, never
        # raise, whatever the project's `filterwarnings`; so must the warm report.
        with warnings.catch_warnings():
            warnings.simplefilter("once", CoverageWarning)
            if self.setup.get("save_coverage"):
                self.save_coverage()
            # Before the session ends, where pytest-cov writes a cold run's report: clover's
            # plugin hashes it into the session record then.
            if self.coverage_out:
                self.write_coverage(self.coverage_out)

    def measure_only(self):
        """In a candidate's fork: coverage.py traces only `coverage_only` from here on, or
        stops when that is empty, for a run whose cold twin measures only those files (what
        its scoring reads). What the zygote measured of them, importing them, stays, as their
        cold run measures their import too; what it measured of other files is never
        reported. A file's disposition is coverage.py's cached answer to whether to trace it:
        each one to trace that is not of these is made an answer not to, and so is each new
        one, which the tracers ask the collector's `should_trace` for."""
        only = self.coverage_only
        if not only:
            self.cov.stop()
            self.cov = None
            self.coverage_out = None
            return
        collector = self.cov._collector

        def not_read(disp):
            if disp is None or not disp.trace:
                return disp
            if self.real(disp.source_filename or disp.canonical_filename) not in only:
                disp.trace = False
                disp.reason = "not read by this run's scoring"
            return disp

        # Each disposition is this fork's copy: the zygote's are untouched.
        for disp in collector.should_trace_cache.values():
            not_read(disp)
        # What the zygote measured of other files is dropped: the report, which saves what
        # was measured into coverage.py's database first, then names these files alone.
        for f in [f for f in collector.data if self.real(f) not in only]:
            del collector.data[f]
        ask = collector.should_trace

        def should_trace(filename, frame):
            return not_read(ask(filename, frame))

        collector.should_trace = should_trace
        for tracer in collector.tracers:
            tracer.should_trace = should_trace

    def compile_sources(self):
        """Bytecode for the package under test, compiled once here into the worker's view (so
        every candidate's view has it): a cold run compiles each module it imports anew.
        Same code objects, same lines; coverage does not tell them apart (a candidate's own
        version of a file is newer than its bytecode, which Python then ignores)."""
        import compileall

        for src in self.setup.get("sources", []):
            path = os.path.join(self.repo, src)
            if os.path.isdir(path):
                compileall.compile_dir(path, quiet=2)
            elif os.path.isfile(path):
                compileall.compile_file(path, quiet=2)

    def freeze(self):
        import threading

        if threading.active_count() != 1:
            raise RuntimeError(
                "pytest's start left %d threads running; a fork would not copy them"
                % (threading.active_count() - 1)
            )
        gc.collect()
        gc.freeze()

    def untraced_rewrite(self):
        """pytest's assertion rewriting of a test file runs with coverage.py's tracer paused.

        It only reads, parses and compiles the file: no line of any measured file runs in it,
        so nothing it could record is lost, but under the tracer every call of pytest's AST
        visitor pays for a trace event, and rewriting was most of collecting a candidate."""
        from _pytest.assertion import rewrite

        original = rewrite._rewrite_test
        zygote = self

        def rewrite_test(fn, config):
            with zygote.untraced():
                return original(fn, config)

        rewrite._rewrite_test = rewrite_test

    @contextlib.contextmanager
    def untraced(self):
        """coverage.py's tracer paused, where it runs, for work that runs no line of a measured
        file (parsing, rewriting): nothing it would record is lost, and every call it makes
        would otherwise pay for a trace event."""
        # A plugin may have stopped coverage (calibrate's does while pytest collects).
        if self.cov is None or sys.gettrace() is None:
            yield
            return
        collector = self.cov._collector
        collector.pause()
        try:
            yield
        finally:
            collector.resume()

    def serve(self):
        _write_frame(self.answers, {"ready": True, "pid": os.getpid()})
        # The next candidate's supervisor is made (namespaces, mounts, loopback) while this
        # one runs: only its files and its run are left for its request. Making them waits
        # on the kernel more than it computes (a network namespace, mounts), as a
        # supervisor's end does (its view unmounted).
        pending = self.supervisor()
        while True:
            head = _read_exact(self.requests, 4)
            body = head and _read_exact(self.requests, struct.unpack(">I", head)[0])
            pid, req_w, ans_r = pending
            if not body:
                os.close(req_w)
                os.close(ans_r)
                os.waitpid(pid, 0)
                return
            self._write_all(req_w, head + body)
            os.close(req_w)
            self.parse_reported(body)
            pending = self.supervisor()
            # The answer is one frame, passed on as it is, as soon as it is whole: the
            # supervisor holds no descriptor of the channel, so a candidate can neither
            # write to it nor read requests.
            answer_head = _read_exact(ans_r, 4)
            answer = answer_head and _read_exact(ans_r, struct.unpack(">I", answer_head)[0])
            os.close(ans_r)
            if answer:
                self._write_all(self.answers, answer_head + answer)
            else:
                _write_frame(self.answers, {"fatal": "the candidate's supervisor died"})
            # The supervisor has ended, its view and namespaces with it (what the candidate
            # left in its tmpfs is no longer charged to the worker), before the next request
            # reaches the next one.
            os.waitpid(pid, 0)

    def supervisor(self):
        """Forks C, which prepares a candidate's namespaces and view and then waits for it.

        C is forked into a pid namespace of its own, whose pid 1 it is: it reaps what the
        candidate leaves and kills the rest when the runner ends, as the cold supervisor
        does, so the runner is C's own fork (one fork of the zygote's image a candidate, not
        two, and nothing of that image to tear down between its end and the answer)."""
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        _check(_libc.unshare(CLONE_NEWPID), "unshare")
        pid = None
        try:
            pid = os.fork()
        finally:
            if pid != 0:
                # The zygote's next children are in its own namespace again.
                _check(_libc.setns(self.pid_ns, CLONE_NEWPID), "setns")
        if pid == 0:
            code = 1
            try:
                for fd in (req_w, ans_r, self.requests, self.answers, self.pid_ns):
                    os.close(fd)
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                problem = None
                try:
                    self.prepare_view()
                except Exception:
                    problem = traceback.format_exc()
                req = _read_frame(req_r)
                if req is None:
                    code = 0
                elif problem:
                    _write_frame(ans_w, {"fatal": problem})
                else:
                    code = self.candidate(req, ans_w)
            except BaseException:
                try:
                    _write_frame(ans_w, {"fatal": traceback.format_exc()})
                except BaseException:
                    pass
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(ans_w)
        return pid, req_w, ans_r

    @staticmethod
    def _write_all(fd, data):
        while data:
            n = os.write(fd, data)
            data = data[n:]

    # --- C: the candidate's supervisor -------------------------------------------------

    def prepare_view(self):
        setup = self.setup
        _check(
            _libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC),
            "unshare",
        )
        _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        repo = self.repo
        # The worker's view of the repository is the lower layer of the candidate's; it is
        # held by descriptor, as the mounts below cover its path (the repository may lie
        # under /tmp).
        lower = os.open(repo, os.O_PATH | os.O_DIRECTORY)
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=1777" % setup["tmpfs_bytes"])
        os.mkdir("/tmp/home", 0o700)
        os.chown("/tmp/home", SANDBOX_ID, SANDBOX_ID)
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=1777" % setup["tmpfs_bytes"])
        os.makedirs(repo, 0o755, exist_ok=True)
        # The upper layer: a tmpfs of its own on the repository's path, which the overlay
        # then covers, so only the overlay reaches it.
        _mount("tmpfs", repo, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=755" % setup["overlay_bytes"])
        os.mkdir(os.path.join(repo, "upper"), 0o755)
        os.mkdir(os.path.join(repo, "work"), 0o700)
        upper = os.open(repo, os.O_PATH | os.O_DIRECTORY)
        _mount(
            "overlay",
            repo,
            "overlay",
            MS_NOSUID | MS_NODEV,
            "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d/upper,workdir=/proc/self/fd/%d/work"
            % (lower, upper, upper),
        )
        os.close(lower)
        # C keeps the upper layer's folder (no candidate process holds it): a mutant batch
        # asks whether a run changed the view.
        self.upper_fd = upper
        os.chown(repo, SANDBOX_ID, SANDBOX_ID)
        # The /proc of C's pid namespace: the candidate's processes alone (and C, whose
        # entries hidepid=2 hides from them).
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
        self._loopback_up()

    def candidate(self, req, answer_fd):
        """C, once its candidate came: writes the files, runs it, answers."""
        lim = req["limits"]
        repo = self.repo
        # A file that could decide pytest's rootdir or configuration file: the worker was
        # configured before its candidates came; a worker configured per run decides them
        # anew. (Only the name is looked at here: C does not parse what a candidate wrote.)
        if self.config is not None and self.may_move_rootdir(req["files"]):
            _write_frame(
                answer_fd,
                {
                    "refused": "the candidate brings a file that may give its run another "
                    "rootdir or configuration file than the worker's"
                },
            )
            return 0
        # A file the candidate brings in place of the repository's is parsed anew for its lines.
        self.replaced = {self.real(os.path.join(repo, f["path"])) for f in req["files"]}
        if self.config is not None:
            dirs = req.get("dirs", self.setup.get("dirs", []))
            # The rootdir follows from the folders: the worker's own, or ones the host saw
            # this worker serve before.
            known = dirs == self.setup.get("dirs") or req.get("setup_known", False)
            why = self.other_setup(dirs, self.replaced, rootdir_known=known)
            if why:
                _write_frame(answer_fd, {"other_setup": why})
                return 0
        patches = []
        for f in req["files"]:
            path = self.real(os.path.join(repo, f["path"]))
            if path in self.loaded:
                try:
                    patches += self.patch(path, f["data"].encode("latin-1"))
                except Unpatchable as e:
                    _write_frame(
                        answer_fd,
                        {
                            "refused": "the candidate replaces %s, which the worker has loaded (%s)"
                            % (f["path"], e)
                        },
                    )
                    return 0
        for fn, code in patches:
            fn.__code__ = code
        if req.get("witness"):
            # A file the request brings (patched in above) is its own version, not the
            # repository's the witness compiled: it is not witnessed.
            brought = {f["path"] for f in req["files"]}
            self.witness([w for w in req["witness"] if w not in brought])
        out_r, out_fd = os.pipe()
        err_r, err_fd = os.pipe()
        # The report channel: only the runner writes to it, only C reads it (up to the cap
        # the request gives).
        ch_r, ch_fd = os.pipe() if req.get("report_channel") else (None, None)
        # A mutant batch: H tells C of each run (`run_mutants`), C answers go on or stop.
        batch = None
        ev_r = ctl_w = None
        if req.get("mutants"):
            ev_r, ev_w = os.pipe()
            ctl_r, ctl_w = os.pipe()
            self.batch_fds = (ev_w, ctl_r)
            batch = Batch(self, ctl_w, len(req["mutants"]))
        for f in req["files"]:
            path = os.path.join(repo, f["path"])
            self._makedirs(os.path.dirname(path))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(f["data"].encode("latin-1"))
            os.chown(path, SANDBOX_ID, SANDBOX_ID)
        for d in [req["workdir"]] + req["writable"]:
            if d:
                path = os.path.join(repo, d)
                self._makedirs(path)
                os.chown(path, SANDBOX_ID, SANDBOX_ID)
        start = time.monotonic()
        h = os.fork()
        if h == 0:
            try:
                for fd in (answer_fd, out_r, err_r, ch_r, ev_r, ctl_w, self.upper_fd):
                    if fd is not None:
                        os.close(fd)
            except BaseException:
                try:
                    os.write(err_fd, traceback.format_exc().encode())
                except BaseException:
                    pass
                os._exit(127)
            self.run_and_exit(lambda: self.runner(req, out_fd, err_fd, ch_fd))
        os.close(out_fd)
        os.close(err_fd)
        deadline = start + lim["wall_ms"] / 1000.0
        captured = {}
        streams = {out_r: HeadTail(lim["output_bytes"]), err_r: HeadTail(lim["output_bytes"])}
        if ch_r is not None:
            os.close(ch_fd)
            streams[ch_r] = ChannelBytes(req["report_channel"])
        if batch is not None:
            for fd in self.batch_fds:
                os.close(fd)
            streams[ev_r] = batch
        snapshot = {}
        if batch is not None and req.get("measured"):

            def answer_of(fd):
                return (streams[fd] if fd in streams else captured[fd]).answer()

            def measured(e):
                """M has ended: the candidate's answer is taken now, before any mutant runs,
                and the wall clock is the mutants' from here on."""
                nonlocal deadline
                if timed_out:
                    return False
                for fd in (out_r, err_r, ch_r):
                    if fd in streams:
                        os.set_blocking(fd, False)
                        streams[fd].push(_read_available(fd))
                        os.set_blocking(fd, True)
                status = e["measured"]
                snapshot.update(
                    {
                        "status": status,
                        "timed_out": False,
                        "duration_us": int((time.monotonic() - start) * 1e6),
                        "cpu_us": e["cpu_us"],
                        "maxrss_kib": e["maxrss_kib"],
                        "stdout": answer_of(out_r),
                        "stderr": answer_of(err_r),
                        "channel": answer_of(ch_r) if ch_r is not None else None,
                        "files": [self._collect(p, req["collect_max_bytes"]) for p in req["collect"]],
                        "disk_full": any(self._full(p) for p in (repo, "/tmp")),
                    }
                )
                for fd in (out_r, err_r, ch_r):
                    if fd in streams:
                        streams[fd] = Discard()
                deadline = time.monotonic() + len(req["mutants"]) * req["mutant_wall_ms"] / 1000.0
                return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and not e.get("left")

            batch.on_measured = measured
        poller = select.poll()
        for fd in streams:
            poller.register(fd, select.POLLIN)
        # Each process of the candidate that ends wakes C, which reaps it at once (the
        # orphans come to C, pid 1 of their namespace).
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)
        poller.register(wake_r, select.POLLIN)
        timed_out = False
        status = None
        gone = False
        # Until the runner's streams close and every process of the candidate is gone: when
        # the runner ends, C kills the rest; the wall clock kills all.
        while streams or not gone:
            now = time.monotonic()
            if not timed_out and now >= deadline:
                self._kill_all()
                timed_out = True
            while not gone:
                try:
                    pid, st = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    # The runner was C's first child: no child left, no process left.
                    gone = True
                    break
                if pid == 0:
                    break
                if pid == h:
                    status = st
                    self._kill_all()
            if gone and not streams:
                break
            wait = 1000 if timed_out else max(1, min(1000, int((deadline - now) * 1000)))
            for fd, _ in poller.poll(wait):
                if fd == wake_r:
                    _read_available(wake_r)
                    continue
                b = os.read(fd, 65536)
                if b:
                    streams[fd].push(b)
                else:
                    poller.unregister(fd)
                    os.close(fd)
                    captured[fd] = streams.pop(fd)
        duration = time.monotonic() - start
        # Every process of the candidate, reaped by C: the runner and whatever it left.
        rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if snapshot:
            _write_frame(answer_fd, dict(snapshot, batch=batch.results))
            os.close(answer_fd)
            return 0
        answer = {
            "status": status,
            "timed_out": timed_out,
            "duration_us": int(duration * 1e6),
            "cpu_us": int((rusage.ru_utime + rusage.ru_stime) * 1e6),
            "maxrss_kib": rusage.ru_maxrss,
            "stdout": captured[out_r].answer(),
            "stderr": captured[err_r].answer(),
            "channel": captured[ch_r].answer() if ch_r is not None else None,
            "batch": batch.results if batch is not None and not req.get("measured") else None,
            "files": [self._collect(p, req["collect_max_bytes"]) for p in req["collect"]],
            "disk_full": any(self._full(p) for p in (repo, "/tmp")),
        }
        _write_frame(answer_fd, answer)
        os.close(answer_fd)
        return 0

    def _makedirs(self, path):
        if os.path.isdir(path):
            return
        self._makedirs(os.path.dirname(path))
        os.mkdir(path, 0o755)
        os.chown(path, SANDBOX_ID, SANDBOX_ID)

    def _loopback_up(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            import fcntl

            req = struct.pack("16sh22x", b"lo", 0)
            flags = struct.unpack("16sh22x", fcntl.ioctl(s, SIOCGIFFLAGS, req))[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | IFF_UP))
        finally:
            s.close()

    def _collect(self, rel, cap):
        """A report read back the way the host reads a cold run's: from the repository down,
        no symlink followed, regular files only, at most `cap` bytes."""
        parts = [p for p in rel.split("/") if p]
        try:
            fd = os.open(self.repo, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as e:
            return {"path": rel, "refused": str(e)}
        try:
            for i, p in enumerate(parts):
                last = i == len(parts) - 1
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY)
                try:
                    nfd = os.open(p, flags, dir_fd=fd)
                except FileNotFoundError:
                    return {"path": rel, "missing": True}
                except OSError as e:
                    return {"path": rel, "refused": "%s: %s" % (p, e.strerror)}
                os.close(fd)
                fd = nfd
            import stat

            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return {"path": rel, "refused": "not a regular file"}
            data = b""
            while len(data) < cap:
                b = os.read(fd, min(1 << 20, cap - len(data)))
                if not b:
                    break
                data += b
            return {"path": rel, "data": data.decode("latin-1"), "truncated": st.st_size > cap}
        finally:
            os.close(fd)

    def _full(self, path):
        st = os.statvfs(path)
        free, size = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
        return free <= max(size // 100, 64 * 1024)

    def fingerprint(self):
        """What a candidate's runs can leave in its view: every entry of the overlay's upper
        layer, /tmp and /dev/shm, with its type, size, time and inode."""
        seen = []
        for top, fd in (("upper", self.upper_fd), ("/tmp", None), ("/dev/shm", None)):
            for root, dirs, files, root_fd in os.fwalk(top, dir_fd=fd):
                dirs.sort()
                for name in sorted(dirs + files):
                    try:
                        st = os.lstat(name, dir_fd=root_fd)
                    except OSError:
                        continue
                    seen.append((top, root, name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino))
        return seen

    @staticmethod
    def _kill_all():
        """C, pid 1 of the candidate's namespace: kills every other process in it."""
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass

    # --- H: the runner -----------------------------------------------------------------

    def run_and_exit(self, run):
        """Runs `run` (an exit status), then what the interpreter does before it ends, and
        ends this process with that status (or an exit handler's own)."""
        code = 3
        try:
            code = run()
            self.exit_as_python_does()
        except SystemExit as e:
            # An exit handler's own exit, as the interpreter would take it.
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)

    @staticmethod
    def exit_as_python_does():
        """What the interpreter does between `python -m pytest` returning and the process
        ending, in its order: it waits for the threads that are not daemons, runs the exit
        handlers and flushes the standard streams. A candidate that leaves a thread running
        or registers an exit handler then ends as it would cold (a timeout, another exit code);
        the rest of the teardown (freeing every object) changes nothing anyone reads."""
        import atexit
        import threading

        threading._shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass

    def runner(self, req, out_fd, err_fd, ch_fd):
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        lim = req["limits"]
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in (null, out_fd, err_fd):
            os.close(fd)
        if self.config is not None:
            self.own_descriptors()
        os.setsid()
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        for res, v in (
            (resource.RLIMIT_CPU, lim["cpu_secs"]),
            (resource.RLIMIT_FSIZE, lim["file_size_bytes"]),
            (resource.RLIMIT_NOFILE, lim["open_files"]),
            (resource.RLIMIT_NPROC, lim["pids"]),
            (resource.RLIMIT_CORE, 0),
        ):
            soft, hard = resource.getrlimit(res)
            v = v if hard == resource.RLIM_INFINITY else min(v, hard)
            resource.setrlimit(res, (v, v))
        for cap in range(64):
            _libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)
        os.setgroups([])
        os.setresgid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID)
        os.setresuid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID)
        os.umask(0o022)
        os.environ["HOME"] = "/tmp/home"
        os.chdir(os.path.join(self.repo, req["workdir"]))
        self.coverage_out = req.get("coverage_out")
        only = req.get("coverage_only")
        if only is not None:
            self.coverage_only = {self.real(os.path.join(self.repo, f)) for f in only}
            if self.cov is not None:
                self.measure_only()
        if ch_fd is not None:
            # As a cold run's plugin takes its channel when `-p` imports it: before any
            # conftest or test module of the candidate runs. A worker configured per run has
            # not imported the plugin yet, and importing it here takes it.
            os.environ["CLOVER_REPORT_FD"] = str(ch_fd)
            import _clover_report

            _clover_report.take_channel()
        if req.get("measured"):
            return self.run_measured(req)
        if req.get("mutants"):
            return self.run_mutants(req)
        return self.run_pytest(req)

    def own_descriptors(self):
        """Points the descriptors pytest set up in the zygote at this candidate's own: the
        ones its capture restores after each test and faulthandler writes to (the zygote's
        /dev/null) at its streams, and the files capture collects output in (shared with the
        zygote and so with every other candidate) at fresh ones."""
        import tempfile

        from _pytest.faulthandler import fault_handler_stderr_fd_key

        capman = self.config.pluginmanager.getplugin("capturemanager")
        capturing = getattr(capman, "_global_capturing", None)
        for cap, target in ((getattr(capturing, "out", None), 1), (getattr(capturing, "err", None), 2)):
            saved = getattr(cap, "targetfd_save", None)
            if isinstance(saved, int):
                os.dup2(target, saved)
            tmpfile = getattr(cap, "tmpfile", None)
            if tmpfile is not None and hasattr(tmpfile, "fileno"):
                try:
                    fd = tmpfile.fileno()
                except (OSError, ValueError):
                    continue
                with tempfile.TemporaryFile() as fresh:
                    os.dup2(fresh.fileno(), fd)
        fd = self.config.stash.get(fault_handler_stderr_fd_key, None)
        if isinstance(fd, int):
            os.dup2(2, fd)

    def run_mutants(self, req):
        """H of a mutant batch: collects the candidate once, then runs it once per mutant in
        a fork of itself with the mutant patched in (`patch`: only function bodies differ, and
        none of those functions has run, here or in the zygote), stopping at the first failing
        test (-x). Each fork's status goes to C, which answers whether the view is still as
        the collection left it; a mutant that cannot be patched, or that comes after a run that
        changed the view or left a process behind, gets no verdict here (the host runs it in
        a fresh view of its own). A mutant is killed when its run does not pass."""
        config, session = self.config, self.session
        if config is None or self.ran is None:
            return 0
        config.args = list(req["targets"])
        self.mutant_options()
        sys.setprofile(self.call_noter())
        try:
            config.hook.pytest_collection(session=session)
        except BaseException:
            return 0
        finally:
            sys.setprofile(None)
        if session.testsfailed or not session.items:
            return 0
        report = self.ready_for_mutants()
        self.tell({"collected": True})
        if not self.told_go():
            return 0
        wall = req["mutant_wall_ms"] / 1000.0
        cpu = req["mutant_cpu_secs"]
        # The control run: the candidate as collected, unmutated, must pass here as it did on
        # its own (else whatever this batch does differently, nothing it says counts).
        started = time.monotonic()
        status, timed_out, cpu_used, outcome, left = self.fork_run(report, [], wall, cpu)
        # A mutant's run ends within three times the control run's and 1 s more (as
        # `pytest::mutant_limits` bounds a run of its own by the candidate's whole run), and
        # within three times its CPU time and 0.25 s more: a mutant that loops forever (a
        # loop's condition turned around) spends its CPU time at once, and is stopped in a
        # quarter of a second rather than a second, whatever else the machine runs; a run that
        # waits spends none, and the wall clock stops it.
        wall = min(wall, 3 * (time.monotonic() - started) + 1.0)
        ok = not timed_out and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        self.tell({"control": bool(ok and outcome.get("ok")), "left": left})
        if left or not ok or not outcome.get("ok") or not self.told_go():
            return 0
        self.judge_mutants(req["mutants"], report, wall, cpu, 3 * cpu_used + 0.25)
        return 0

    def run_measured(self, req):
        """H of a measured run with mutants: the candidate's own run, measured, as
        `run_pytest` makes it, and then, if it passed, its mutants judged as a batch judges
        them, from the same collection. H collects (noting what runs, as a batch's collection
        does) and forks M, which runs the tests and ends the session as H would have: M's run
        is the candidate's. C takes its answer when M has ended (`measured`), before any mutant
        runs; then each mutant is patched into a fork of H, unmeasured, M's run being the
        control run. A collection that failed, or that left a thread M would not have, makes
        H run the candidate itself, as a plain run does, and judge no mutant."""
        if self.config is None or self.ran is None:
            return self.run_pytest(req)
        self.config.args = list(req["targets"])
        sys.setprofile(self.call_noter())
        try:
            return self.run_session(collect=True, collected=lambda: self.fork_measured(req))
        finally:
            sys.setprofile(None)

    def fork_measured(self, req):
        """Right after the collection of a measured run: returns in M (the run goes on as
        it would in H), and in H judges the mutants and ends."""
        import threading

        sys.setprofile(None)
        session = self.session
        if session.testsfailed or not session.items or threading.active_count() != 1:
            return
        try:
            used = resource.getrusage(resource.RUSAGE_SELF)
            started = time.monotonic()
            pid = os.fork()
        except Exception:
            return
        if pid == 0:
            for fd in self.batch_fds:
                os.close(fd)
            self.batch_fds = None
            # What H was to its run: the leader of a session of its own, its CPU time (the
            # collection's included) within the run's limit.
            os.setsid()
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if soft != resource.RLIM_INFINITY:
                v = max(1, soft - int(used.ru_utime + used.ru_stime))
                resource.setrlimit(resource.RLIMIT_CPU, (v, v))
            return
        code = 0
        try:
            self.after_measured(req, pid, started)
        except BaseException:
            code = 3
        os._exit(code)

    def after_measured(self, req, pid, started):
        """H once it has forked M (`pid`, at `started`): tells C how M's run ended and, if C
        says go on, judges the mutants unmeasured."""
        _, status, usage = os.wait4(pid, 0)
        measured_wall = time.monotonic() - started
        own = resource.getrusage(resource.RUSAGE_SELF)
        left = self.left_behind()
        self.tell(
            {
                "measured": status,
                "cpu_us": int((own.ru_utime + own.ru_stime + usage.ru_utime + usage.ru_stime) * 1e6),
                "maxrss_kib": max(own.ru_maxrss, usage.ru_maxrss),
                "left": left,
            }
        )
        if left or not self.told_go():
            return
        # Nothing is measured from here on: coverage stops without a report, and the
        # session record went to the host with M's run.
        if self.cov is not None:
            self.cov.stop()
        self.cov = None
        self.coverage_out = None
        record = sys.modules.get("_clover_report")
        if getattr(record, "_channel", None) is not None:
            os.close(record._channel)
            record._channel = None
        self.mutant_options()
        report = self.ready_for_mutants()
        # Within `pytest::mutant_limits` of M's run, and M's CPU time as a control run's.
        wall = min(req["mutant_wall_ms"] / 1000.0, 3 * measured_wall + 1.0)
        cpu = min(req["mutant_cpu_secs"], max(1, int(wall)) * 2)
        cpu_budget = 3 * (usage.ru_utime + usage.ru_stime) + 0.25
        self.judge_mutants(req["mutants"], report, wall, cpu, cpu_budget)

    def tell(self, obj):
        """An event of a mutant batch, to C."""
        self._write_all(self.batch_fds[0], (json.dumps(obj) + "\n").encode())

    def told_go(self):
        """C's answer to the last event: go on."""
        return os.read(self.batch_fds[1], 1) == b"1"

    def call_noter(self):
        """A profile hook that adds each function of the repository that is called to the
        functions that ran (`self.ran`)."""
        ran = self.ran
        root = os.path.join(os.path.realpath(self.repo), "")
        repo = os.path.join(self.repo, "")

        def profile(frame, event, arg):
            if event == "call" and frame.f_code.co_filename.startswith((repo, root)):
                ran.add(_code_key(frame.f_code))

        return profile

    @staticmethod
    def left_behind():
        """Whether a process other than pid 1 and this one is alive in the namespace."""
        return any(p.isdigit() and int(p) not in (1, os.getpid()) for p in os.listdir("/proc"))

    def mutant_options(self):
        """The options of a mutant's run: it stops at its first failing test (-x)."""
        config = self.config
        config.option.maxfail = 1
        # A mutant's failure is not read but by its test's name: its traceback is formatted
        # the cheap way (pytest's `--tb=native`), not with source and context.
        config.option.tbstyle = "native"
        # No report is read of a mutant's run: JUnit's plugin writes its report nowhere
        # rather than into the view.
        from _pytest.junitxml import xml_key

        xml = config.stash.get(xml_key, None)
        if xml is not None:
            xml.logfile = os.devnull

    def ready_for_mutants(self):
        """After a collection the mutants' forks share: what each fork's run would report
        (a dict its `Failures` plugin fills), the loaded files and their live functions
        noted, the heap frozen."""
        from _pytest.junitxml import bin_xml_escape, mangle_test_address, xml_key

        config = self.config
        # The files loaded now, and their live functions: the zygote's, and those the
        # collection made.
        self.note_loaded()
        self.index_functions()
        # What a mutant's run's JUnit report would say: the tests that failed (in setup, call
        # or teardown), named as it names them (calibrate keeps them as the mutant's
        # killers), and whether some test passed (one that only skips checked nothing).
        xml = config.stash.get(xml_key, None)
        prefix = [xml.prefix] if xml is not None and getattr(xml, "prefix", None) else []
        report = {"failed": [], "passed": set(), "bad": set()}
        failed, passed, bad = report["failed"], report["passed"], report["bad"]

        class Failures:
            @staticmethod
            def pytest_runtest_logreport(report):
                if report.failed:
                    bad.add(report.nodeid)
                    # At most what a pipe holds: the run's child writes them before it ends.
                    if len(failed) < 50:
                        names = mangle_test_address(report.nodeid)
                        failed.append(
                            [".".join(prefix + names[:-1])[:500], bin_xml_escape(names[-1])[:500]]
                        )
                elif report.skipped:
                    bad.add(report.nodeid)
                elif report.when == "call":
                    passed.add(report.nodeid)

        config.pluginmanager.register(Failures(), "clover-batch-failures")
        # What the collection made stays as the forks find it, and their collections (pytest
        # collects garbage several times as a session ends) look only at what each made.
        gc.collect()
        gc.freeze()
        return report

    def fork_run(self, report, patches, wall, cpu, cpu_budget=None, lazy=None):
        """One run of the collected candidate in a fork, `patches` applied (or `lazy`, a
        path not imported yet and its text, imported from that text when the run imports
        it), within `wall` seconds, `cpu` seconds of CPU time (its limit) and, when given,
        `cpu_budget` seconds of its CPU time (a budget, every thread's): its status, whether
        it ran out of time, its CPU time, what its report would say (`ready_for_mutants`),
        and whether it left a process behind."""
        names_r, names_w = os.pipe()
        pid = os.fork()
        if pid == 0:

            def run():
                for fd in self.batch_fds + (names_r,):
                    os.close(fd)
                hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
                v = cpu if hard == resource.RLIM_INFINITY else min(cpu, hard)
                resource.setrlimit(resource.RLIMIT_CPU, (v, v))
                if cpu_budget is not None:
                    # SIGPROF ends the run when its CPU time (every thread's) is spent.
                    signal.signal(signal.SIGPROF, signal.SIG_DFL)
                    signal.setitimer(signal.ITIMER_PROF, cpu_budget)
                for fn, code_object in patches:
                    fn.__code__ = code_object
                if lazy is not None:

                    def unjudged():
                        self._write_all(names_w, b'{"unjudged": true}')
                        os._exit(UNJUDGED)

                    sys.meta_path.insert(0, _MutantFinder(lazy[0], lazy[1], unjudged))
                code = self.run_session(collect=False)
                # Past the session's end, as a cold run's report is written then.
                out = {"failed": report["failed"], "ok": bool(report["passed"] - report["bad"])}
                self._write_all(names_w, json.dumps(out).encode())
                return code

            self.run_and_exit(run)
        os.close(names_w)
        status, timed_out, cpu_used = self._wait(pid, wall)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF:
            timed_out = True
        # What the child wrote before it ended; a process it left may hold the pipe open.
        os.set_blocking(names_r, False)
        data = _read_available(names_r)
        os.close(names_r)
        try:
            out = json.loads(data) if data and os.WIFEXITED(status) else {}
        except ValueError:
            out = {}
        if not isinstance(out, dict):
            out = {}
        return status, timed_out, cpu_used, out, self.left_behind()

    def judge_mutants(self, mutants, report, wall, cpu, cpu_budget):
        """Runs each of `mutants` in a fork (`fork_run`) and tells C its verdict, while C
        says go on."""
        for i, m in enumerate(mutants):
            path = os.path.realpath(os.path.join(self.repo, m["path"]))
            data = m["data"].encode("latin-1")
            patches, lazy = [], None
            if path in self.loaded:
                try:
                    patches = self.patch(path, data)
                except Unpatchable:
                    continue
            else:
                # A module not imported yet is imported from the mutant's text, if the run
                # imports it, as a cold run imports the file the mutant replaced.
                lazy = (path, data)
            status, timed_out, _, out, left = self.fork_run(
                report, patches, wall, cpu, cpu_budget, lazy
            )
            self.tell(
                {
                    "mutant": i,
                    "status": status,
                    "timed_out": timed_out,
                    "failed": out.get("failed", []),
                    "ok": bool(out.get("ok")),
                    "left": left,
                    "unjudged": bool(out.get("unjudged")),
                }
            )
            if left or not self.told_go():
                break

    @staticmethod
    def _wait(pid, wall):
        """The status of child `pid`, killed when it runs past `wall` seconds, whether it
        was, and its CPU time (seconds)."""
        deadline = time.monotonic() + wall
        timed_out = False
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done == pid:
                return status, timed_out, usage.ru_utime + usage.ru_stime
            if not timed_out and time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                timed_out = True
            time.sleep(0.0005)

    def run_pytest(self, req):
        if self.config is None:
            return self.run_pytest_late(req)
        config = self.config
        config.args = list(req["targets"])
        return self.run_session(collect=True)

    def run_session(self, collect, collected=None):
        """What pytest's main does from collection (unless `collect` is false: it was done
        before this fork) to the session's end; the exit status. `collected` is called when
        the collection did not raise (`fork_measured`)."""
        from _pytest import outcomes
        from _pytest.config import ExitCode, UsageError

        config, session = self.config, self.session
        status = 0
        looped = False
        try:
            try:
                if collect:
                    config.hook.pytest_collection(session=session)
                if collected is not None:
                    collected()
                config.hook.pytest_runtestloop(session=session)
                looped = True
                if session.testsfailed:
                    status = ExitCode.TESTS_FAILED
                elif session.testscollected == 0:
                    status = ExitCode.NO_TESTS_COLLECTED
            except UsageError:
                status = ExitCode.USAGE_ERROR
                raise
            except session.Failed:
                # A stop at the first failures (-x, --maxfail), as pytest's main takes it.
                status = ExitCode.TESTS_FAILED
            except (KeyboardInterrupt, outcomes.Exit) as e:
                status = ExitCode.INTERRUPTED
                if isinstance(e, outcomes.Exit) and e.returncode is not None:
                    status = e.returncode
                import _pytest._code

                config.hook.pytest_keyboard_interrupt(
                    excinfo=_pytest._code.ExceptionInfo.from_current()
                )
            except BaseException:
                import _pytest._code

                status = ExitCode.INTERNAL_ERROR
                config.notify_exception(_pytest._code.ExceptionInfo.from_current(), config.option)
        finally:
            if self.cov is not None:
                # pytest-cov reports after the test loop returns: when collection or the loop
                # raised (a stop at the first failure, -x), a cold run has no report, unless
                # its pytest-cov wraps the loop the old way, which reports whatever happened.
                self.stop_coverage(report=looped or _pytest_cov_reports_after_raise())
            session.exitstatus = status
            os.chdir(str(session.startpath))
            try:
                config.hook.pytest_sessionfinish(session=session, exitstatus=status)
            except outcomes.Exit as e:
                if e.returncode is not None:
                    session.exitstatus = e.returncode
            config._ensure_unconfigure()
        return int(session.exitstatus)

    def run_pytest_late(self, req):
        """The whole of `python -m pytest ARGS TARGETS` in this process: configuration,
        session, collection, tests, session end."""
        import pytest

        args = list(self.setup["args"]) + list(req["targets"])
        code = pytest.main(args, plugins=[self.start_coverage()])
        return int(code)

    def save_coverage(self):
        """The measured data, contexts included, written to $COVERAGE_FILE as pytest-cov
        leaves it for whoever reads it at session end (the zygote measured in memory: a data
        file it opened would be shared by every candidate)."""
        from coverage.data import CoverageData

        out = CoverageData(basename=os.environ.get("COVERAGE_FILE", ".coverage"))
        out.update(self.cov.get_data())
        out.write()

    def other_setup(self, dirs, brought, rootdir_known):
        """Why a cold run of a candidate in `dirs` (its targets' folders, relative to the
        working directory), bringing the files `brought` (real paths), would be configured
        otherwise than this worker: another rootdir or configuration file, or other initial
        conftests. None when it would not. A cold run's targets are files: pytest loads the
        conftests of their folder and of each folder above it (up to confcutdir) before it
        configures, where this worker, configured with folders, also loaded those of their
        `test*` subfolders; and a conftest the candidate brings is one a cold run loads first.
        Only the repository's view is read (folders, configuration and conftest files), no
        file is written; where pytest's helpers are not as expected, the answer is that it
        cannot tell."""
        import pathlib

        pm = self.config.pluginmanager
        try:
            invocation = pathlib.Path(self.config.invocation_params.dir)
            folders = [pathlib.Path(os.path.abspath(invocation / d)) for d in dirs]
            if not rootdir_known:
                why = self.other_rootdir(folders)
                if why:
                    return why
            want = set()
            cut = getattr(pm, "_confcutdir", None)
            considered = getattr(
                pm, "_is_in_confcutdir", lambda p: cut is None or p not in cut.parents
            )
            for folder in [] if pm._noconftest else folders:
                for parent in (folder, *folder.parents):
                    path = parent / "conftest.py"
                    if considered(parent) and (
                        path.is_file() or self.real(str(path)) in brought
                    ):
                        want.add(self.real(str(path)))
            have = {self.real(m.__file__) for m in pm._conftest_plugins}
        except Exception as e:  # noqa: BLE001 - an unknown pytest: not the same, to be safe
            return "cannot tell its configuration (%r)" % (e,)
        if want != have:
            return "its initial conftests would be %s, not %s" % (sorted(want), sorted(have))
        return None

    def other_rootdir(self, folders):
        """Why pytest, given `folders`, would find another rootdir or configuration file than
        this worker's (pytest's own `determine_setup`, which reads the configuration files it
        finds); None when it would not."""
        import inspect

        from _pytest.config.findpaths import determine_setup

        config = self.config
        ns = config.known_args_namespace
        given = {
            "inifile": getattr(ns, "inifilename", None),
            "override_ini": getattr(ns, "override_ini", None),
            "args": [str(f) for f in folders],
            "rootdir_cmd_arg": getattr(ns, "rootdir", None) or None,
            "invocation_dir": config.invocation_params.dir,
        }
        accepted = inspect.signature(determine_setup).parameters
        found = determine_setup(**{k: v for k, v in given.items() if k in accepted})
        if (found[0], found[1]) != (config.rootpath, config.inipath):
            return "its rootdir and configuration file would be %s and %s, not %s and %s" % (
                found[0],
                found[1],
                config.rootpath,
                config.inipath,
            )
        return None

    def may_move_rootdir(self, files):
        """Whether the candidate's files could give its run another rootdir or configuration
        file than the worker's: the worker was configured for the same target folders in the
        same view, so only a file pytest looks for when it decides them (a configuration file
        by its name, setup.py) can. Such a candidate goes to a worker configured per run,
        which decides them as a cold run does."""
        names = {
            "pytest.toml",
            ".pytest.toml",
            "pytest.ini",
            ".pytest.ini",
            "pyproject.toml",
            "tox.ini",
            "setup.cfg",
            "setup.py",
        }
        try:
            from _pytest.config.findpaths import CONFIG_LOADERS_BY_NAME

            names.update(CONFIG_LOADERS_BY_NAME)
        except ImportError:
            pass
        return any(os.path.basename(f["path"]) in names for f in files)

    def write_coverage(self, rel):
        """The lines coverage.py's XML report would mark as hit, per file, named as it names
        them (relative to the repository, `relative_files`)."""
        from coverage.python import PythonFileReporter

        cov = self.cov
        data = cov.get_data()
        files = {}
        for f in sorted(data.measured_files()):
            key = self.real(f)
            fr = None if key in self.replaced else self.reporters.get(key)
            fr = fr or PythonFileReporter(f, cov)
            try:
                analysis = cov._analyze(f, file_reporter=fr)
            except Exception:
                continue
            hit = sorted(analysis.statements - analysis.missing)
            files[fr.relative_filename().replace("\\", "/")] = hit
        with open(os.path.join(self.repo, rel), "w") as out:
            json.dump(files, out)


def main():
    with open(sys.argv[1]) as f:
        setup = json.load(f)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    z = Zygote(setup)
    try:
        z.warm()
    except BaseException:
        _write_frame(z.answers, {"fatal": traceback.format_exc()})
        return
    z.serve()


if __name__ == "__main__":
    main()

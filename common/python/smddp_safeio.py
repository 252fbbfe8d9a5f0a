"""The input and output discipline of smddp's Python tools (smddp-report, the
SageMaker config reader, the Kubernetes node-health job), the same promise as
the C++ tools' smddp/tools/input_file.h and atomic_file.h (docs/testing.md,
"Hostile input"):

- inputs are opened without blocking and must be regular files; reads are
  capped in size; text must be UTF-8;
- JSON is capped in depth, its numbers are finite and in range, its strings
  are valid Unicode;
- numbers on a command line are decimal, finite and range-checked;
- outputs are written atomically: through a symbolic link, in place into a
  device or FIFO (never blocking on one without a reader), a hard-linked
  file refused, no temporary left behind;
- every error is one line and an exit code from docs' table (64 for bad
  input), never a traceback.

Standard library only: the node-health job runs in a bare python3.
"""
import errno
import itertools
import json
import math
import os
import re
import stat
import sys

EXIT_USAGE = 64
EXIT_SOFTWARE = 70
EXIT_INTERRUPTED = 130

MIB = 1 << 20
MAX_INPUT_BYTES = 64 * MIB  # a smddp-bench -J of 10^5 rows is about 30 MiB
MAX_DEPTH = 64  # every document we read nests less than 10 deep
MAX_INTEGER = 1 << 64  # the C++ tools write 64-bit integers
MAX_SECONDS = 1e7  # the longest wait any tool takes: smddp/common/numbers.h's kMaxSeconds
MAX_SYMLINK_HOPS = 40
_serial = itertools.count()  # two writes in one process never share a temporary

_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d{1,20}")


class UsageError(Exception):
    """Bad usage or an input that cannot be used: one line on stderr, exit 64."""


# ---- reading --------------------------------------------------------------

def _why_not_regular(mode):
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    return "not a regular file (a FIFO, device or socket)"


def read_bytes(path, what, max_bytes=MAX_INPUT_BYTES):
    """The bytes of the regular file `path`. Opened with O_NONBLOCK, so a FIFO
    without a writer is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise UsageError(f"{what}: cannot read {path}: {e.strerror}") from None
    except (ValueError, TypeError):  # an embedded NUL
        raise UsageError(f"{what}: {path!r} is not a file name") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what}: cannot read {path}: {_why_not_regular(st.st_mode)}")
        if st.st_size > max_bytes:
            raise UsageError(f"{what}: cannot read {path}: larger than {max_bytes // MIB or 1} MiB")
        chunks, total = [], 0
        while True:  # the size may have grown since fstat: read at most one byte past the cap
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise UsageError(f"{what}: cannot read {path}: larger than {max_bytes // MIB or 1} MiB")
        return b"".join(chunks)
    except OSError as e:
        raise UsageError(f"{what}: cannot read {path}: {e.strerror}") from None
    finally:
        os.close(fd)


def read_text(path, what, max_bytes=MAX_INPUT_BYTES):
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{what}: {path}: not UTF-8 text (byte {e.start})") from None


# ---- JSON -----------------------------------------------------------------

def _reject_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text):
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} overflows a double")
    return x


def _bounded_int(text):
    if len(text.lstrip("-")) > 20:
        raise ValueError(f"{text[:24]}... is out of range")
    x = int(text)
    if not -MAX_INTEGER < x < MAX_INTEGER:
        raise ValueError(f"{text} is out of range (a 64-bit integer)")
    return x


def _check_tree(value, max_depth):
    """Depth and string validity, without recursion (a deep tree cannot
    exhaust the stack here either)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("a string holds an unpaired surrogate (\\ud800..\\udfff)") from None
            continue
        if not isinstance(v, (dict, list)):
            continue
        if depth > max_depth:
            raise ValueError(f"nested deeper than {max_depth} levels")
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, item in items:
            if isinstance(k, str):
                stack.append((k, depth))
            stack.append((item, depth + 1))


def parse_json(text, what, max_depth=MAX_DEPTH):
    """A JSON value with finite numbers, 64-bit integers, valid strings and at
    most max_depth levels, or UsageError naming why not."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                           parse_int=_bounded_int)
        _check_tree(value, max_depth)
        return value
    except json.JSONDecodeError as e:
        raise UsageError(f"{what}: not JSON (line {e.lineno} column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise UsageError(f"{what}: not usable JSON (nested deeper than {max_depth} levels)") from None
    except ValueError as e:
        raise UsageError(f"{what}: not usable JSON ({e})") from None


def load_json(path, what, max_bytes=MAX_INPUT_BYTES, max_depth=MAX_DEPTH):
    return parse_json(read_text(path, what, max_bytes), f"{what} {path}", max_depth)


def finite_json(value):
    """A copy fit for json.dumps(allow_nan=False): non-finite floats (an
    overflowed ratio) become null, which a browser's JSON.parse accepts."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


# ---- shapes: the types and ranges a reader relies on ------------------------

class Shape:
    """A value's expected type and range. check() returns a message, or None."""

    def check(self, value):
        raise NotImplementedError


class Int(Shape):
    def __init__(self, lo=-(1 << 63), hi=(1 << 64) - 1):
        self.lo, self.hi = lo, hi

    def check(self, value):
        if not isinstance(value, int) or isinstance(value, bool):
            return "expected a whole number"
        if not self.lo <= value <= self.hi:
            return f"{value} is out of range {self.lo}..{self.hi}"
        return None


class Num(Shape):
    def __init__(self, lo=-1e300, hi=1e300):
        self.lo, self.hi = lo, hi

    def check(self, value):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return "expected a number"
        if not self.lo <= value <= self.hi:
            return f"{value:g} is out of range {self.lo:g}..{self.hi:g}"
        return None


class Str(Shape):
    def __init__(self, max_len=4096):
        self.max_len = max_len

    def check(self, value):
        if not isinstance(value, str):
            return "expected a string"
        return f"a string longer than {self.max_len}" if len(value) > self.max_len else None


class Bool(Shape):
    def check(self, value):
        return None if isinstance(value, bool) else "expected true or false"


class Anything(Shape):
    def check(self, value):
        return None


class Opt(Shape):
    """`shape`, or null."""

    def __init__(self, shape):
        self.shape = shape

    def check(self, value):
        return None if value is None else self.shape.check(value)


class List(Shape):
    def __init__(self, item, max_len=1 << 20):
        self.item, self.max_len = item, max_len

    def check(self, value):
        if not isinstance(value, list):
            return "expected a list"
        if len(value) > self.max_len:
            return f"a list of {len(value)}: at most {self.max_len}"
        return None


class Obj(Shape):
    """An object with these keys; a key ending in '?' may be absent. Other
    keys are ignored, so newer writers keep working."""

    def __init__(self, fields):
        self.fields = {k.rstrip("?"): (shape, k.endswith("?")) for k, shape in fields.items()}

    def check(self, value):
        if not isinstance(value, dict):
            return "expected an object"
        for key, (_, optional) in self.fields.items():
            if key not in value and not optional:
                return f"'{key}' is missing"
        return None


def check_shape(value, shape, where):
    """Raises UsageError naming the first place where value is not shape,
    e.g. "rows[3].bytes: expected a whole number"."""
    stack = [(value, shape, where)]
    while stack:
        v, sh, at = stack.pop()
        problem = sh.check(v)
        if problem:
            raise UsageError(f"{at}: {problem}")
        if isinstance(sh, Opt) and v is not None:
            sh = sh.shape
        if isinstance(sh, List):  # reversed: the first bad place is the one named
            stack += reversed([(item, sh.item, f"{at}[{i}]") for i, item in enumerate(v)])
        elif isinstance(sh, Obj):
            stack += reversed([(v[k], s, f"{at}.{k}") for k, (s, _) in sh.fields.items() if k in v])


# ---- numbers on a command line ---------------------------------------------

def decimal(text, what, lo=-math.inf, hi=math.inf, unit=""):
    """A finite decimal number in lo..hi: no hex, no inf or nan, no 1e999."""
    s = str(text).strip()
    if not _DECIMAL.fullmatch(s) or not math.isfinite(float(s)):
        raise UsageError(f"{what} '{text}': expected a decimal number{_range_text(lo, hi, unit)}")
    x = float(s)
    if not lo <= x <= hi:
        raise UsageError(f"{what} {s}: expected {_range_text(lo, hi, unit).strip()}")
    return x


def integer(text, what, lo, hi):
    s = str(text).strip()
    if not _INTEGER.fullmatch(s) or not lo <= int(s) <= hi:
        raise UsageError(f"{what} '{text}': expected a whole number {lo}..{hi}")
    return int(s)


def _range_text(lo, hi, unit):
    if lo == -math.inf and hi == math.inf:
        return ""
    unit = f" {unit}" if unit else ""
    if hi == math.inf:
        return f" of {lo:g}{unit} or more"
    return f" {lo:g}..{hi:g}{unit}"


def decimal_arg(what, lo=-math.inf, hi=math.inf, unit=""):
    """An argparse type: decimal(...) for option `what`."""
    return lambda text: decimal(text, what, lo, hi, unit)


def integer_arg(what, lo, hi):
    return lambda text: integer(text, what, lo, hi)


# ---- writing --------------------------------------------------------------

NEW, FILE, STREAM = "new", "file", "stream"


def resolve_write_target(path, what):
    """(kind, target): symbolic links followed; a directory, socket or
    hard-linked file refused with UsageError."""
    target = path
    for _ in range(MAX_SYMLINK_HOPS + 1):
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return NEW, target  # a dangling link creates its target
        except (OSError, ValueError) as e:
            raise UsageError(f"{what} {path}: cannot be inspected: {getattr(e, 'strerror', None) or e}") from None
        if stat.S_ISLNK(st.st_mode):
            link = os.readlink(target)
            target = link if os.path.isabs(link) else os.path.join(os.path.dirname(target), link)
            continue
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"will not write {what} {path}: {target} is a directory")
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            return STREAM, target
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"will not write {what} {path}: {target} is not a regular file, character device or FIFO")
        if st.st_nlink > 1:
            raise UsageError(f"will not replace {what} {path}: {target} has {st.st_nlink} hard links; "
                             "replacing it would split them")
        return FILE, target
    raise UsageError(f"will not write {what} {path}: too many levels of symbolic links")


def check_writable(path, what):
    """Refuses, before any work, an output that write_atomically would refuse
    or could not create. Creates nothing that stays."""
    kind, target = resolve_write_target(path, what)
    if kind == STREAM:
        if not os.access(target, os.W_OK):
            raise UsageError(f"{what} {path}: not writable")
        return
    directory = os.path.dirname(target) or "."
    if not os.path.isdir(directory):
        raise UsageError(f"{what} {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write in {directory}")
    if kind == FILE and not os.access(target, os.W_OK):
        raise UsageError(f"{what} {path}: the file is read-only")


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_atomically(path, text, what):
    """Readers see the old file or the whole new one. Raises UsageError."""
    data = text.encode("utf-8")
    kind, target = resolve_write_target(path, what)
    if kind == STREAM:
        try:
            # O_NONBLOCK: a FIFO without a reader is ENXIO, not a wait forever.
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError as e:
            why = "a FIFO with no reader" if e.errno == errno.ENXIO else e.strerror
            raise UsageError(f"cannot write {what} {path}: {why}") from None
        try:
            os.set_blocking(fd, True)
            _write_all(fd, data)
        except OSError as e:
            raise UsageError(f"cannot write {what} {path}: {e.strerror}") from None
        finally:
            os.close(fd)
        return
    tmp = f"{target}.tmp.{os.getpid()}.{next(_serial)}"
    fd = -1
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        if kind == FILE:  # a replaced file keeps its permissions
            os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
        _write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
        dfd = os.open(os.path.dirname(target) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except BaseException as e:  # nothing of a refused or cut-short write stays behind
        if fd >= 0:
            os.close(fd)
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise UsageError(f"cannot write {what} {path}: {e.strerror or e}") from None
        raise


# ---- the program's edge -----------------------------------------------------

def run_main(prog, main, argv=None):
    """main(argv) -> exit code, with every failure one line: UsageError 64,
    an interrupt 130, a closed stdout 0 (a pager quit), anything else 70.
    Nothing reaches the user as a traceback."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        code = main(argv)
        sys.stdout.flush()
        return code
    except UsageError as e:
        _say(prog, str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say(prog, "interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except SystemExit as e:  # --help, or a library's own exit
        if isinstance(e.code, str):  # sys.exit("why"): Python prints it and exits 1
            _say(prog, e.code)
            return 1
        return e.code if isinstance(e.code, int) else 0
    except MemoryError:
        _say(prog, "out of memory")
        return EXIT_SOFTWARE
    except Exception as e:  # noqa: BLE001 - the promise is one line, whatever broke
        _say(prog, f"internal error ({type(e).__name__}: {e}); please report it")
        return EXIT_SOFTWARE


def _say(prog, message):
    line = " ".join(f"{prog}: {message}".split("\n"))
    try:
        print(line.encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr)
    except OSError:
        pass


def _silence_stdout():
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

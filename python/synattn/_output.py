"""Writing an output path: the library's one policy (include/synattn/io/output_path.hpp
and io/atomic_file.hpp; docs/errors.md, "Files"), for the Python package's writers.

    "-"                          standard output, written directly;
    a new path                   created atomically (its folder must exist);
    a regular file               replaced atomically (a new file renamed over it);
    a FIFO or character device   written directly: opened for writing (a FIFO
                                 waits for its reader), never renamed over, so
                                 /dev/null stays a device;
    /dev/stdout, /dev/stderr,    written directly (appending) whatever they lead
    /dev/fd/N, /proc/.../fd/N    to: a rename would replace the file a shell
                                 redirected there;
    a symlink                    followed link by link; its final file follows
                                 the rules above (a regular file is replaced in
                                 its own folder, the link stays a link); a link
                                 to nothing, or a loop, is refused;
    a directory, block device,   refused: RuntimeError "WHO: cannot write 'PATH':
    socket, empty path           it is a directory", nothing written.

"Atomically": the bytes go to a temporary file beside the target, created
exclusively and never through a symlink (O_CREAT | O_EXCL | O_NOFOLLOW),
flushed to the disk (fsync), renamed over the target (os.replace), and the
folder is synced so the rename survives a crash. Readers see the old file
or the new one, never a truncated mix; on any failure the temporary file is
removed and the old file is left as it was.
"""
import errno
import itertools
import os
import stat
import sys
import time

__all__ = ["resolve_output_path", "write_file_atomically"]

NEW_FILE, REGULAR_FILE, STANDARD_OUTPUT, STREAM = "new file", "regular file", "standard output", "stream"

_counter = itertools.count()


def _folder_of(path):
    slash = path.rfind("/")
    if slash < 0:
        return "."
    return "/" if slash == 0 else path[:slash]


def _descriptor_path(p):
    if p in ("/dev/stdout", "/dev/stderr", "/dev/stdin") or p.startswith("/dev/fd/"):
        return True
    return p.startswith("/proc/") and "/fd/" in p


def resolve_output_path(path, who):
    """(kind, file) for writing `path`, as the C++ resolve_output_path classifies it: kind is one of
    NEW_FILE, REGULAR_FILE, STANDARD_OUTPUT, STREAM; file is a symlink's final target, else the path.
    Raises RuntimeError for what the policy refuses. Writes nothing."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)

    def refuse(why):
        raise RuntimeError(f"{who}: cannot write '{path}': {why}")

    if path == "":
        refuse("an empty path")
    if path == "-":
        return STANDARD_OUTPUT, "-"
    at = path
    for hop in range(40):
        it = "it " if hop == 0 else f"it is a symlink to '{at}', which "
        if _descriptor_path(at):
            try:
                st = os.stat(at)
            except OSError as e:
                refuse(f"{it}cannot be examined: {e.strerror}")
            if stat.S_ISDIR(st.st_mode):
                refuse(f"{it}is a directory")
            return STREAM, at
        try:
            st = os.lstat(at)
        except OSError as e:
            if e.errno != errno.ENOENT:
                refuse(f"{it}cannot be examined: {e.strerror}")
            if hop > 0:
                refuse(f"{it}does not exist (a symlink to nothing is not followed)")
            folder = _folder_of(at)
            try:
                fs = os.stat(folder)
            except OSError as e2:
                refuse(f"its folder '{folder}' cannot be used: {e2.strerror}")
            if not stat.S_ISDIR(fs.st_mode):
                refuse(f"'{folder}' is not a folder")
            return NEW_FILE, at
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(at)
            except OSError as e:
                refuse(f"{it}cannot be read: {e.strerror}")
            if target == "":
                refuse("an empty symlink")
            at = target if target.startswith("/") else _folder_of(at) + "/" + target
            continue
        if stat.S_ISREG(mode):
            return REGULAR_FILE, at
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            return STREAM, at
        if stat.S_ISDIR(mode):
            refuse(f"{it}is a directory")
        kind = "is a block device" if stat.S_ISBLK(mode) else "is a socket" if stat.S_ISSOCK(mode) else "is not a file"
        refuse(f"{it}{kind} (only regular files, FIFOs and character devices are written)")
    refuse("too many levels of symlinks")


def _write_all(fd, pieces):
    for piece in pieces:
        view = memoryview(piece).cast("B")
        while len(view):
            n = os.write(fd, view)  # retried on EINTR by Python itself (PEP 475)
            view = view[n:]


def write_file_atomically(path, pieces, who):
    """Writes the concatenation of `pieces` (bytes-like objects, written one after another without
    joining them in memory) to `path` by the policy above; `who` names the caller in messages."""
    if isinstance(pieces, (bytes, bytearray, memoryview)):
        pieces = (pieces,)
    shown = os.fsdecode(os.fspath(path))
    fail = f"{who}: cannot write '{shown}': "
    kind, file = resolve_output_path(path, who)
    if kind == STANDARD_OUTPUT:
        sys.stdout.flush()  # what the program printed before comes first
        try:
            _write_all(1, pieces)  # the descriptor, as the C++ writer: sys.stdout may be replaced
        except OSError as e:
            raise RuntimeError(f"{fail}writing to standard output failed: {e.strerror}") from None
        return
    if kind == STREAM:
        # Opened without O_CREAT, so nothing new is created; never renamed over.
        try:
            fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError as e:
            raise RuntimeError(f"{fail}cannot open it for writing: {e.strerror}") from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode) or stat.S_ISBLK(mode):
                raise RuntimeError(f"{fail}it changed into a directory or block device while being opened")
            try:
                _write_all(fd, pieces)
            except OSError as e:
                raise RuntimeError(f"{fail}writing failed: {e.strerror}") from None
        finally:
            os.close(fd)
        return
    # A new path or a regular file (a symlink's target replaced in its own folder; the link stays).
    fd = -1
    for attempt in range(101):
        temp = f"{file}.tmp.{os.getpid()}.{next(_counter)}.{time.monotonic_ns() % 1000000007}"
        try:
            # mode 0o666: the kernel applies the umask, as a plain open() would.
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
            break
        except OSError as e:
            if e.errno != errno.EEXIST or attempt == 100:
                raise RuntimeError(f"{fail}cannot create a temporary file beside it: {e.strerror}") from None
    step = "writing failed"
    try:
        _write_all(fd, pieces)
        step = "flushing to disk failed"
        os.fsync(fd)
        step = "closing failed"
        closing, fd = fd, -1
        os.close(closing)
        step = "cannot rename the temporary file into place"
        os.replace(temp, file)
    except BaseException as e:
        # Anything, a KeyboardInterrupt included, leaves no temporary file and the old file as it was.
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise RuntimeError(f"{fail}{step}: {e.strerror}") from None
        raise
    # The rename is durable once the folder's entry is on disk; a folder that cannot be
    # opened or synced (some file systems) does not undo the write.
    try:
        dfd = os.open(_folder_of(file), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)

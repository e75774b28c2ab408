"""Writing files safely: check the destination first, write beside it, rename into place.

Every command that writes (report, make-checkpoint, profile --save, exported configs) goes
through here: a destination that cannot be written (under a regular file, read-only, a file
where a folder is wanted) is refused before any work as an `InputError` naming it, and so is a
file to be replaced that is not a regular file (a device node, a FIFO, a symbolic link: the
rename would replace the node or the link itself), checked again just before the rename; data
goes to a hidden temporary in the same folder (same file system: `os.replace` is atomic),
removed on any failure, Ctrl-C, SIGTERM or SIGHUP, and by the next run when a SIGKILL left it;
an OSError while writing (full disk, permission, read-only file system) becomes an `InputError`
with the path and the system's reason (exit 2, one paragraph, no traceback). Standard library
only (and archscope.errors, .interrupts, .reads).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from archscope.errors import InputError
from archscope.interrupts import cleanup_on_signals, signals_deferred
from archscope.reads import kind_of

def check_destination(path: str | os.PathLike, what: str = "output folder", *,
                      folder: bool = True) -> Path:
    """Refuse, before any work, a destination that cannot be written; return it as a Path.

    `folder` says whether `path` is to be a folder (written into) or a file (replaced). Missing
    folders above it are fine (they are created when writing); the nearest one that exists must
    be a folder this user can write in.
    """
    path = Path(path)
    with os_errors_as_input(path):
        _check_destination(path, what, folder)
    return path


def _check_destination(path: Path, what: str, folder: bool) -> None:
    if os.path.lexists(path) and not path.exists():
        raise InputError(f"{what} {path}: is a broken symbolic link; remove it or choose "
                         f"another path")
    if path.exists() and path.is_dir() != folder:
        kind, want = ("a file", "a folder") if folder else ("a folder", "a file")
        raise InputError(f"{what} {path}: exists and is {kind}, not {want}; choose another "
                         f"path")
    if not folder:
        _check_replaceable(path, what, path)
    start = path if folder and path.is_dir() else path.parent
    for anc in (start, *start.parents):
        if os.path.lexists(anc) and not anc.exists():
            raise InputError(f"{what} {path}: {_shown(anc)} is a broken symbolic link, so "
                             f"nothing can be written under it")
        if anc.exists():
            break
    else:  # pragma: no cover - a relative path always reaches ".", an absolute one "/"
        anc = Path.cwd()
    if not anc.is_dir():
        raise InputError(f"{what} {path}: {_shown(anc)} is a file, not a folder, so nothing "
                         f"can be written under it; choose another path")
    if not os.access(anc, os.W_OK | os.X_OK):
        why = ("is on a read-only file system" if _read_only_mount(anc)
               else "is not writable by this user (permission denied)")
        raise InputError(f"{what} {path}: {_shown(anc)} {why}; choose another path")


def write_file_atomic(path: str | os.PathLike, data: bytes | str, *,
                      what: str = "file") -> Path:
    """Write `data` to `path` all at once: a hidden temporary beside it (with the pid in its
    name), flushed to disk, then renamed over `path`. Missing folders are created. On any
    failure or interruption the temporary (and any folder made here) is removed and `path` is
    as it was; an OSError is raised as an InputError naming `path`."""
    path = check_destination(path, what, folder=False)
    if isinstance(data, str):
        data = data.encode("utf-8")
    remove_stale(path.parent, path.name, "tmp")
    tmp = path.parent / _temp_name(path.name)
    created: list[Path] = []
    done = False
    with cleanup_on_signals() as guard, os_errors_as_input(path):
        try:
            _make_folders(path.parent, created)
            _write_bytes(tmp, data)
            guard.check()
            _check_replaceable(path, what, path)  # again: it may have changed meanwhile
            with signals_deferred():
                os.replace(tmp, path)
                done = True
        finally:
            if not done:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                _remove_empty(created)
    _fsync_folder(path.parent)
    return path


def write_tree_atomic(root: str | os.PathLike, files: Mapping[str, bytes | str], *,
                      what: str = "output folder") -> Path:
    """Write a set of files under `root` (keys are relative POSIX paths) all or nothing.

    Everything is first written into a hidden temporary folder inside `root` (same file system;
    a full disk fails here, before any file of `root` is touched); then the subfolders are
    made and each file is renamed into place (renames need no space, and signals wait until
    they are done); then the temporary folder is removed. On any failure or interruption before
    the renames, the temporary folder and any folder made here are removed, and `root` is
    exactly as it was."""
    root = check_destination(root, what, folder=True)
    rels = [_relative(rel) for rel in files]
    with os_errors_as_input(root):
        _check_targets(root, rels, what)
    remove_stale(root, STAGE, "tmp")
    stage = root / _temp_name(STAGE)
    created: list[Path] = []
    done = False
    with cleanup_on_signals() as guard, os_errors_as_input(root):
        try:
            _make_folders(root, created)
            stage.mkdir(mode=0o700)
            for rel, body in zip(rels, files.values()):
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                _write_bytes(stage / rel, body.encode("utf-8") if isinstance(body, str) else body)
            for rel in rels:
                _make_folders((root / rel).parent, created)
            guard.check()
            _check_targets(root, rels, what)  # again: one may have changed meanwhile
            with signals_deferred():
                for rel in rels:
                    os.replace(stage / rel, root / rel)
                done = True
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            if not done:
                _remove_empty(created)
    for folder in {(root / rel).parent for rel in rels}:
        _fsync_folder(folder)
    return root


def write_error(err: OSError, path: str | os.PathLike) -> InputError:
    """The InputError for an OSError met while writing `path`: the path and the OS's reason."""
    reason = err.strerror or str(err) or type(err).__name__
    code = errno.errorcode.get(err.errno or 0)
    return InputError(f"cannot write {path}: {reason}{f' ({code})' if code else ''}; nothing "
                      f"was written there")


@contextlib.contextmanager
def os_errors_as_input(path: str | os.PathLike) -> Iterator[None]:
    """Inside the `with`, an OSError is raised as `write_error(err, path)`."""
    try:
        yield
    except OSError as err:
        raise write_error(err, path) from err


def _write_bytes(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist) with `data`, flushed to disk before returning."""
    with open(path, "xb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _temp_name(name: str, ending: str = "tmp") -> str:
    return f".{name}.{os.getpid()}-{secrets.token_hex(3)}.{ending}"


STAGE = "archscope-write"  # write_tree_atomic's hidden folder: .archscope-write.PID-XXXXXX.tmp


def remove_stale(folder: Path, name: str, ending: str) -> list[Path]:
    """Remove what a killed run (SIGKILL, a power cut: no cleanup ran) left in `folder`: the
    hidden temporaries `_temp_name(name, ending)` makes whose process no longer exists. One of
    a run still going (this one, or another archscope writing the same place) is left alone.
    Best effort and quiet: returns what it removed."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)-[0-9a-f]{{6}}\.{re.escape(ending)}")
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            m = pattern.fullmatch(entry.name)
            if m is None or _alive(int(m[1])):
                continue
            path = Path(entry.path)
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's, or not ours to judge
    return True


def _check_replaceable(path: Path, what: str, shown: Path) -> None:
    """Refuse to rename over anything but a regular file: a rename replaces a device node, a
    FIFO or a symbolic link itself (run as root, `--out /dev/full` replaced the device)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # missing, or under a file: the other checks say what is wrong
        return
    if not stat.S_ISREG(mode):
        where = f"{shown}: is" if path == shown else f"{shown}: {path} is"
        raise InputError(f"{what} {where} {kind_of(mode)}; archscope replaces only a regular "
                         f"file, so nothing was written")


def _relative(rel: str) -> str:
    """A key of write_tree_atomic's `files`, checked to stay inside the root."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel:
        raise ValueError(f"write_tree_atomic: {rel!r} is not a relative path inside the root")
    return PurePosixPath(*parts).as_posix()


def _check_targets(root: Path, rels: list[str], what: str) -> None:
    """Refuse, before writing, a file that would land on a folder or under a file."""
    for rel in rels:
        target = root / rel
        for anc in [*reversed(PurePosixPath(rel).parents[:-1])]:
            if (root / anc).exists() and not (root / anc).is_dir():
                raise InputError(f"{what} {root}: {root / anc} is a file, but {rel} is to be "
                                 f"written under it; remove it or choose another folder")
        if target.is_dir():
            raise InputError(f"{what} {root}: {target} is a folder, but the file {rel} is to "
                             f"be written there; remove it or choose another folder")
        _check_replaceable(target, what, root)


def _make_folders(folder: Path, made: list[Path]) -> None:
    """mkdir -p, adding the folders it makes to `made` (outermost first) for undoing."""
    missing = []
    for anc in (folder, *folder.parents):
        if anc.exists():
            break
        missing.append(anc)
    for anc in reversed(missing):
        try:
            anc.mkdir()
        except FileExistsError:
            continue  # made meanwhile by someone else: not ours to remove
        made.append(anc)


def _remove_empty(folders: list[Path]) -> None:
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (best effort: not every system can open a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _shown(path: Path) -> str:
    return str(path) if str(path) not in ("", ".") else f"the current folder ({Path.cwd()})"

"""Every write checks its destination first, writes beside it and renames, and leaves nothing
half-written on an error, Ctrl-C or SIGTERM (archscope/writes.py and the commands using it).

Read-only folders: the tests run as root here, and root may write anywhere (os.access says yes
to W_OK), so `read_only` chmods the folder 0o555 and, when running as root, also makes
os.access answer as it would for an ordinary user (no write bit, no access). The only read-only
mount here belongs to the sandbox, so none is used.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import archscope.writes as writes
from archscope.errors import InputError
from archscope.interrupts import cleanup_on_signals
from archscope.writes import check_destination, write_file_atomic, write_tree_atomic


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry under root (hidden ones too): files with their bytes, folders as None."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def hidden(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in root.rglob(".*")]


@pytest.fixture
def read_only(monkeypatch):
    folders = []

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o555)
        folders.append(folder)
        if os.geteuid() == 0:
            real = os.access

            def access(path, mode, *args, **kwargs):
                if mode & os.W_OK and any(Path(path).resolve() == f.resolve() for f in folders):
                    return False
                return real(path, mode, *args, **kwargs)

            monkeypatch.setattr(os, "access", access)
        return folder

    yield make
    for folder in folders:
        folder.chmod(0o755)


@pytest.fixture
def disk_full_after(monkeypatch):
    """Make the n+1-th file written through archscope.writes fail with ENOSPC."""
    def arm(n: int):
        real, count = writes._write_bytes, [0]

        def write(path, data):
            count[0] += 1
            if count[0] > n:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            real(path, data)

        monkeypatch.setattr(writes, "_write_bytes", write)
    return arm


# --- check_destination -----------------------------------------------------------------------


def test_a_path_under_a_regular_file_is_refused(tmp_path):
    (tmp_path / "somefile").write_text("x")
    with pytest.raises(InputError) as err:
        check_destination(tmp_path / "somefile" / "sub" / "deeper", "output folder")
    message = str(err.value)
    assert str(tmp_path / "somefile" / "sub" / "deeper") in message
    assert f"{tmp_path / 'somefile'} is a file, not a folder" in message


def test_a_file_where_a_folder_is_wanted_and_the_reverse(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="exists and is a file, not a folder"):
        check_destination(tmp_path / "f")
    with pytest.raises(InputError, match="exists and is a folder, not a file"):
        check_destination(tmp_path / "d", "profile record", folder=False)
    assert check_destination(tmp_path / "d") == tmp_path / "d"
    assert check_destination(tmp_path / "f", folder=False) == tmp_path / "f"


def test_missing_folders_are_fine_and_nothing_is_created(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    assert check_destination(target) == target
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_folder_is_refused(tmp_path, read_only):
    folder = read_only(tmp_path / "ro")
    for target in (folder, folder / "new" / "sub"):
        with pytest.raises(InputError) as err:
            check_destination(target, "--out folder")
        assert str(target) in str(err.value) and "not writable" in str(err.value)


# --- write_file_atomic / write_tree_atomic ---------------------------------------------------


def test_write_file_atomic_replaces_and_creates_folders(tmp_path):
    path = tmp_path / "new" / "sub" / "x.json"
    write_file_atomic(path, b"one")
    write_file_atomic(path, "two")
    assert path.read_bytes() == b"two" and hidden(tmp_path) == []
    assert (path.stat().st_mode & 0o777) == 0o666 & ~_umask()  # not mkstemp's private 0600


def test_write_file_atomic_on_a_full_disk_changes_nothing(tmp_path, disk_full_after):
    (tmp_path / "x.json").write_bytes(b"old")
    before = snapshot(tmp_path)
    disk_full_after(0)
    for target in (tmp_path / "x.json", tmp_path / "new" / "folder" / "y.json"):
        with pytest.raises(InputError) as err:
            write_file_atomic(target, b"new")
        assert str(target) in str(err.value) and "No space left on device" in str(err.value)
        assert snapshot(tmp_path) == before  # no temp, no folder made on the way


def test_write_tree_atomic_writes_every_file(tmp_path):
    files = {"a.md": b"a", "models/b.md": b"b", "figures/deep/c.png": b"c"}
    write_tree_atomic(tmp_path / "out", files)
    assert snapshot(tmp_path / "out") == {"a.md": b"a", "figures": None, "figures/deep": None,
                                          "figures/deep/c.png": b"c", "models": None,
                                          "models/b.md": b"b"}


@pytest.mark.parametrize("fail_after", [0, 2, 4])
def test_write_tree_atomic_on_a_full_disk_is_all_or_nothing(tmp_path, disk_full_after,
                                                           fail_after):
    out = tmp_path / "out"
    write_tree_atomic(out, {"a.md": b"old a", "models/b.md": b"old b"})
    before = snapshot(out)
    disk_full_after(fail_after)
    files = {"a.md": b"new", "models/b.md": b"new", "models/c.md": b"new", "new/d.md": b"new",
             "e.md": b"new"}
    with pytest.raises(InputError, match="No space left on device"):
        write_tree_atomic(out, files)
    assert snapshot(out) == before
    with pytest.raises(InputError):
        write_tree_atomic(tmp_path / "fresh" / "out", files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # folders it made are gone


def test_write_tree_atomic_refuses_a_file_landing_on_a_folder_before_writing(tmp_path):
    (tmp_path / "out" / "comparison.md").mkdir(parents=True)
    (tmp_path / "out" / "models").write_text("a file")
    before = snapshot(tmp_path)
    for files in ({"x.md": b"x", "comparison.md": b"x"}, {"x.md": b"x", "models/a.md": b"x"}):
        with pytest.raises(InputError, match="remove it or choose another folder"):
            write_tree_atomic(tmp_path / "out", files)
        assert snapshot(tmp_path) == before
    with pytest.raises(ValueError):
        write_tree_atomic(tmp_path / "out", {"../escape.md": b"x"})


# --- signals ---------------------------------------------------------------------------------


def _python(code: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=timeout)


def test_sigterm_inside_cleanup_on_signals_runs_the_cleanup(tmp_path):
    done = _python("""
        import os, signal, sys, time
        from archscope.interrupts import cleanup_on_signals, signals_deferred
        before = signal.getsignal(signal.SIGTERM)
        try:
            with cleanup_on_signals():
                with signals_deferred():
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.2)
                    print("critical section finished")
                time.sleep(5)
                print("not interrupted")
        except SystemExit as exc:
            print("cleanup ran, code", exc.code)
        assert signal.getsignal(signal.SIGTERM) is before
        print("handlers restored")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["critical section finished", "cleanup ran, code 143",
                                           "handlers restored"]
    assert "SIGTERM received" in done.stderr


def test_a_sigterm_whose_exit_was_swallowed_still_stops_the_write(tmp_path):
    """The handler's SystemExit raised while C code held the interpreter can be swallowed (a
    flaky make-checkpoint run exited 0 after printing that it was removing its work): the
    guard checked before the commit raises it again, and so does leaving the `with`."""
    done = _python("""
        import os, signal, time
        from archscope.interrupts import cleanup_on_signals
        for where in ("check", "exit"):
            try:
                with cleanup_on_signals() as guard:
                    try:  # stands for code that catches what the handler raised
                        os.kill(os.getpid(), signal.SIGTERM)
                        time.sleep(0.2)
                    except SystemExit:
                        pass
                    if where == "check":
                        guard.check()
                    print("went on after", where)
            except SystemExit as exc:
                print("stopped at", where, exc.code)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["stopped at check 143", "went on after exit",
                                           "stopped at exit 143"]


def test_write_tree_atomic_interrupted_leaves_nothing(tmp_path, monkeypatch):
    calls = []

    def slow(path, data):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt  # what Ctrl-C (or SIGTERM inside cleanup_on_signals) does
        Path(path).write_bytes(data)

    monkeypatch.setattr(writes, "_write_bytes", slow)
    with pytest.raises(KeyboardInterrupt):
        write_tree_atomic(tmp_path / "out", {f"{k}.md": b"x" for k in range(5)})
    assert list(tmp_path.iterdir()) == []
    before = signal.getsignal(signal.SIGTERM)
    with cleanup_on_signals():  # on the main thread it installs and restores handlers
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


# --- the commands ----------------------------------------------------------------------------


@pytest.fixture
def no_build(monkeypatch):
    """Building a report or drawing weights must not be reached."""
    import archscope.nn.build as nn_build
    import archscope.report.pages.build as build

    def boom(*args, **kwargs):
        raise AssertionError("work was done before the destination was checked")

    monkeypatch.setattr(build, "build_reports", boom)
    monkeypatch.setattr(nn_build, "build_model", boom)


def _no_traceback(err: str) -> None:
    """One paragraph, the last thing said: `error: ...`."""
    assert "Traceback" not in err and err.endswith("\n")
    assert err.rstrip("\n").split("\n")[-1].startswith("error: ")


COMMANDS = [["report", "--out", "{}"],
            ["make-checkpoint", "llama-3.2-1b", "--weights", "{}", "--set", "n_layers=1"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_destination_under_a_file_is_refused_before_any_work(run_cli, tmp_path, no_build,
                                                                command):
    import archscope.measure.timing  # noqa: F401  (imports are not what is timed)
    import archscope.weights.writer  # noqa: F401

    (tmp_path / "somefile").write_text("mine")
    target = tmp_path / "somefile" / "sub"
    start = time.perf_counter()
    code, _, err = run_cli(*[arg.format(target) for arg in command])
    assert time.perf_counter() - start < 1.0
    assert code == 2 and str(target) in err and "is a file, not a folder" in err
    _no_traceback(err)
    assert snapshot(tmp_path) == {"somefile": b"mine"}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_read_only_destination_is_refused_before_any_work(run_cli, tmp_path, no_build,
                                                             read_only, command):
    folder = read_only(tmp_path / "ro")
    for target in (folder, folder / "sub"):
        code, _, err = run_cli(*[arg.format(target) for arg in command])
        assert code == 2 and str(target) in err and "not writable" in err
        _no_traceback(err)
        assert snapshot(tmp_path) == {"ro": None}


def test_report_on_a_full_disk_changes_nothing_in_out(run_cli, tmp_path, monkeypatch,
                                                      disk_full_after):
    import archscope.report.pages.build as build

    def fake_build(specs, profiles, claims, progress=None, benchmarks=None, families=None):
        return {"comparison.md": b"new", "models/a.md": b"new", "figures/f.png": b"new",
                "data/estimates.json": b"new", "profiles.md": b"new"}

    monkeypatch.setattr(build, "build_reports", fake_build)
    out, inputs = tmp_path / "out", tmp_path / "inputs"
    inputs.mkdir()
    for rel in ("comparison.md", "data/estimates.json", "figures/f.png"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(b"old")
    before = snapshot(out)
    disk_full_after(3)
    code, _, err = run_cli("report", "--out", str(out), "--data", str(inputs), "--claims",
                           str(inputs))
    assert code == 2 and str(out) in err and "No space left on device" in err
    _no_traceback(err)
    assert snapshot(out) == before and hidden(tmp_path) == []


def test_sigterm_during_make_checkpoint_leaves_nothing(tmp_path):
    """A real run in a child process, terminated once its .partial folder appears."""
    target = tmp_path / "ckpt"
    args = ["make-checkpoint", "llama-3.2-1b", "--weights", str(target), "--set", "n_layers=1",
            "--set", "vocab_size=512"]  # ~3 s of drawing and writing after .partial appears
    proc = subprocess.Popen([sys.executable, "-c", "from archscope.cli import main; main()",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob(".ckpt.*.partial")):
            assert proc.poll() is None, f"finished before it was interrupted: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "no .partial folder appeared within 30 s"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM received" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no .partial, no half checkpoint


def test_write_hf_config_under_a_file_is_input_error(tmp_path):
    from archscope.spec import load_spec
    from archscope.spec.hf import write_hf_config

    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        write_hf_config(load_spec("gpt2"), tmp_path / "f" / "sub")
    path = write_hf_config(load_spec("gpt2"), tmp_path / "ok")
    assert path == tmp_path / "ok" / "config.json" and hidden(tmp_path) == []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

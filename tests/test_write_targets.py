"""Writers replace only what is theirs (issue 35): a destination that is a device node, a FIFO
or a symbolic link is refused and left as it was (run as root, `--out /dev/full` replaced the
device with a PNG); hidden staging a SIGKILL left behind is removed by the next run; standard
output that cannot be written (`> /dev/full`, a reader that left) ends in one line, not a
traceback. Device nodes are made in tmp_path: no test writes near a real one."""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys

import pytest

import archscope.writes as writes
from archscope.errors import InputError
from archscope.writes import remove_stale, write_file_atomic, write_tree_atomic
from hostile import dead_pid, refused, within


def fifo(path):
    os.mkfifo(path)
    return path


def device(path):
    """A character device node like /dev/null's (1, 3), where this user may make one."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")
    return path


def link(path, target):
    target.write_text("theirs")
    path.symlink_to(target)
    return path


@pytest.mark.parametrize("make, words", [
    (fifo, "is a FIFO"), (device, "is a character device"),
    (lambda p: link(p, p.parent / "target.txt"), "is a symbolic link"),
])
def test_a_file_writer_replaces_only_a_regular_file(make, words, tmp_path):
    path = make(tmp_path / "out.png")
    before = os.lstat(path)
    with within(10), pytest.raises(InputError, match=words):
        write_file_atomic(path, b"png", what="--out")
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    if (tmp_path / "target.txt").exists():
        assert (tmp_path / "target.txt").read_text() == "theirs"


def test_a_tree_writer_refuses_a_target_that_is_no_regular_file(tmp_path):
    root = tmp_path / "out"
    (root / "figures").mkdir(parents=True)
    fifo(root / "figures" / "a.png")
    link(root / "index.md", tmp_path / "elsewhere.md")
    for name in ("figures/a.png", "index.md"):
        with within(10), pytest.raises(InputError, match="replaces only a regular file"):
            write_tree_atomic(root, {"new.md": "x", name: "y"})
    assert sorted(p.name for p in root.iterdir()) == ["figures", "index.md"]
    assert (tmp_path / "elsewhere.md").read_text() == "theirs"


def test_a_target_that_changes_after_the_check_is_still_refused(tmp_path, monkeypatch):
    path = tmp_path / "out.png"
    real = writes._write_bytes

    def write_then_swap(tmp, data):  # the destination becomes a FIFO while data is written
        real(tmp, data)
        if not path.exists():
            os.mkfifo(path)

    monkeypatch.setattr(writes, "_write_bytes", write_then_swap)
    with within(10), pytest.raises(InputError, match="is a FIFO"):
        write_file_atomic(path, b"png")
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]  # no temporary left


def test_sweep_out_to_a_fifo_or_a_device(tmp_path, run_cli):
    for target in (fifo(tmp_path / "f.png"), device(tmp_path / "d.png")):
        with within(20):
            refused(run_cli, "sweep", "gpt2", "--grid", "n_layers=1,2", "--plot",
                    "params_total,kv_cache_bytes", "--out", target,
                    words=(str(target), "replaces only a regular file"))
        assert not stat.S_ISREG(os.lstat(target).st_mode)


def test_make_checkpoint_refuses_a_linked_folder(tmp_path, run_cli):
    (tmp_path / "real").mkdir()
    (tmp_path / "ckpt").symlink_to(tmp_path / "real")
    refused(run_cli, "make-checkpoint", "gpt2", "--weights", tmp_path / "ckpt",
            words=("is a symbolic link",), seconds=20)
    assert (tmp_path / "ckpt").is_symlink() and not any((tmp_path / "real").iterdir())


# --- what a SIGKILL left ---------------------------------------------------------------------

def test_stale_staging_of_dead_runs_is_removed_and_live_runs_kept(tmp_path):
    dead, live = dead_pid(), os.getppid()
    (tmp_path / f".archscope-write.{dead}-abc123.tmp").mkdir()
    (tmp_path / f".archscope-write.{dead}-abc123.tmp" / "x.md").write_text("x")
    (tmp_path / f".archscope-write.{live}-abc123.tmp").mkdir()
    (tmp_path / f".out.png.{dead}-0f0f0f.tmp").write_text("x")
    (tmp_path / ".archscope-write.notapid-abc123.tmp").mkdir()  # not our name: kept
    (tmp_path / "keep.md").write_text("mine")
    removed = remove_stale(tmp_path, writes.STAGE, "tmp")
    assert [p.name for p in removed] == [f".archscope-write.{dead}-abc123.tmp"]
    write_file_atomic(tmp_path / "out.png", b"png")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        f".archscope-write.{live}-abc123.tmp", ".archscope-write.notapid-abc123.tmp",
        "keep.md", "out.png"])


def test_the_next_tree_write_removes_a_killed_runs_stage(tmp_path):
    stale = tmp_path / f".archscope-write.{dead_pid()}-abcdef.tmp"
    (stale / "figures").mkdir(parents=True)
    write_tree_atomic(tmp_path, {"index.md": "x"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.md"]


@pytest.mark.slow  # writes a checkpoint (a tokenizer is trained): ~4 s
def test_the_next_checkpoint_removes_a_killed_runs_partial_folder(tmp_path):
    from archscope.spec import load_spec
    from archscope.weights.writer import write_checkpoint

    stale = tmp_path / f".ckpt.{dead_pid()}-abcdef.partial"
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"half")
    spec = load_spec("llama-3.2-1b", ["n_layers=1", "d_model=64", "attention.n_heads=2",
                                      "attention.n_kv_heads=1", "attention.head_dim=32",
                                      "ffn.d_ff=64", "vocab_size=512"])
    write_checkpoint(spec, tmp_path / "ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


# --- standard output ---------------------------------------------------------------------------

class _Failing(io.StringIO):
    def __init__(self, err: OSError):
        super().__init__()
        self.err = err

    def write(self, text):
        raise self.err


@pytest.mark.parametrize("err, code, words", [
    (OSError(errno.ENOSPC, "No space left on device"), 2,
     "cannot write the output (standard output): No space left on device (ENOSPC)"),
    (BrokenPipeError(errno.EPIPE, "Broken pipe"), 1, ""),  # the reader left: nothing to say
])
def test_an_output_that_cannot_be_written_is_one_line(err, code, words, capsys, monkeypatch):
    from archscope.cli import main

    monkeypatch.setattr(sys, "stdout", _Failing(err))
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "gpt2", "--format", "json"])
    assert exit_.value.code == code
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr and (words in stderr if words else stderr == ""), stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_output_to_dev_full_in_a_real_process():
    with open("/dev/full", "w") as full:  # written to, never replaced
        proc = subprocess.run([sys.executable, "-m", "archscope.cli", "show", "gpt2"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: cannot write the output") and \
        "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr

"""Writing an export file safely: a plain file name, never through a symbolic link or onto the database, atomically.

Plain Python (no pandas): every export writes through here, the one-line ones (the best configuration) included.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from engine.errors import UserError

_MAX_FILENAME = 150
_UNSAFE = re.compile(r'[\\/:*?"<>|\x00-\x1f\x7f]')
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


def safe_filename(text: str, fallback: str = "export") -> str:
    """A name that is one plain file in any folder on any OS: no separators, '..', control chars.

    Unsafe characters become ``_``, runs of dots collapse to one, leading dots and trailing dots and
    spaces go, reserved Windows device names get a ``_`` prefix; the extension survives shortening.
    """
    name = unicodedata.normalize("NFKC", str(text))
    name = _UNSAFE.sub("_", name)
    name = "".join(ch if unicodedata.category(ch)[0] != "C" else "_" for ch in name)
    name = re.sub(r"\.{2,}", ".", name).strip().lstrip(".").rstrip(". ")
    if len(name) > _MAX_FILENAME:
        stem, dot, ext = name.rpartition(".")
        keep = ext if dot and 0 < len(ext) <= 10 else ""
        name = (name[: _MAX_FILENAME - len(keep) - 1].rstrip(". ") + "." + keep) if keep else name[:_MAX_FILENAME]
    if name.split(".")[0].upper() in _WINDOWS_RESERVED:
        name = "_" + name
    return name or fallback


def _symlink_in(path: Path) -> Path | None:
    """The first existing component of ``path`` (absolute, as given) that is a symbolic link."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        current = current / part
        if current.is_symlink():
            return current
        if not current.exists():
            return None
    return None


def _same_file(path: Path, st: os.stat_result | None, keep: Iterable[str | Path]) -> bool:
    for other in keep:
        other = Path(other)
        if path == other.resolve():
            return True
        try:
            kept = other.stat()
        except OSError:
            continue
        if st is not None and (kept.st_dev, kept.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


_KINDS = ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISFIFO, "named pipe (FIFO)"),
          (stat.S_ISSOCK, "socket"))


def _place(folder: str | Path, filename: str, keep: Iterable[str | Path]) -> tuple[Path, os.stat_result | None]:
    """The target path and what is there now, or a one-line UserError saying why not to write it."""
    given = Path.cwd() / Path(folder).expanduser()
    link = _symlink_in(given)
    if link is not None:
        raise UserError(f"export: folder {folder} goes through the symbolic link {link} (to {os.readlink(link)}); "
                        "give the real folder")
    root = given.resolve()
    if root.exists() and not root.is_dir():
        raise UserError(f"export: {root} is not a folder")
    if filename in ("", ".", "..") or "\x00" in filename or Path(filename).name != filename:
        raise UserError(f"export: file name {filename!r} is not a plain name inside {root}")
    target = root / filename
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise UserError(f"export: file name {filename!r} is not a plain name inside {root} "
                        f"(it is a symbolic link to {os.readlink(target)}; refusing to write through it)")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"export: {target} is a folder, not a file")
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "special file")
        raise UserError(f"export: {target} is a {kind}, not a regular file; refusing to replace it")
    if _same_file(target, st, keep):
        raise UserError(f"export: {target} is the database (or its write-ahead log); refusing to overwrite it")
    return target, st


def export_target(folder: str | Path, filename: str, *, keep: Iterable[str | Path] = ()) -> tuple[Path, bool]:
    """Where :func:`write_export` would write ``filename`` in ``folder``, and whether it would
    replace an existing file; refuses what :func:`write_export` refuses."""
    target, st = _place(folder, filename, keep)
    return target, st is not None


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_export(data: str | bytes, folder: str | Path, filename: str, *, keep: Iterable[str | Path] = ()) -> Path:
    """Write ``data`` as ``folder/filename`` (the folder created if needed) and return its path.

    Refused, in one line: a name that is not plain (it would leave ``folder``), a folder reached
    through a symbolic link, a target that is a symbolic link, a folder, a device, a FIFO or a
    socket (replacing those loses what they are), and any of the ``keep`` files (the database and
    its ``.wal``). The data goes to a temporary file in the same folder, synced, then renamed over
    the target, so a crash leaves the old file or the new one, never half of one; a replaced file
    keeps its permissions.
    """
    target, st = _place(folder, filename, keep)
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    handle, temp = tempfile.mkstemp(dir=root, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _sync_folder(root)
    return target


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (best effort: not every file system syncs a folder)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)

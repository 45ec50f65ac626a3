"""A memory's files on disk: made private to the user (0600 files, 0700 folders) and judged
before memory writes into them (never through a symbolic link someone planted, never into a file
another user owns in a folder others can write). Apart from gate.engine.store, which opens the
database and refuses what planted names: the same judgment serves write.log (gate.memory.audit),
which is no database. Standard library only: it runs on every hook's open.
"""

import os
import stat


def keep_private(path: str) -> None:
    """Make the default memory folder (`projects/<key>/memory/`, which holds memory.db and
    write.log) 0700 again when someone made it wider: Claude Code creates that folder 0755 for its
    own auto memory. Only that layout: a database the owner put elsewhere (MEMORY_GATE_DB) lives in
    a folder that is not memory-gate's to change. Never fails the open."""
    folder = os.path.dirname(os.path.abspath(path))
    if (os.path.basename(path), os.path.basename(folder)) != ("memory.db", "memory") or os.path.basename(
        os.path.dirname(os.path.dirname(folder))
    ) != "projects":
        return
    try:
        found = os.stat(folder, follow_symlinks=False)
        if found.st_uid == os.getuid() and stat.S_ISDIR(found.st_mode) and found.st_mode & 0o077:
            os.chmod(folder, 0o700)
    except OSError:
        pass


def create_private(path: str) -> None:
    missing = []
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        pass  # made meanwhile by another session, or planted: gate.engine.store.refuse_planted tells which


# Every file SQLite or memory-gate writes beside a database (SQLite makes the first three itself).
COMPANIONS = ("-wal", "-shm", "-journal")
LOG_NAME = "write.log"


def shared_folder(folder: os.stat_result) -> bool:
    """Someone other than this user can create or replace files in the folder."""
    return bool(folder.st_mode & 0o022) or folder.st_uid != os.geteuid()


def planted(name: str, found: os.stat_result, shared: bool) -> str | None:
    """What is wrong with the file memory-gate is about to write, with the mend; None if nothing."""
    import stat

    if stat.S_ISLNK(found.st_mode):
        try:
            target = os.readlink(name)
        except OSError:
            target = "?"
        return (
            f"{name} is a symbolic link (to {target}): memory-gate writes its files itself and "
            "never through a link, which someone could have planted to make memory overwrite "
            "another file. Remove the link (if you made it, point MEMORY_GATE_DB at the real "
            "file instead)"
        )
    if not stat.S_ISREG(found.st_mode):
        return (
            f"{name} is not a regular file (a folder, device, pipe or socket): memory is a file of "
            "its own, and SQLite would put its journal beside this one. Point MEMORY_GATE_DB (or "
            "--db) at a database file, e.g. ./memory.db"
        )
    if shared and found.st_uid != os.geteuid():
        return (
            f"{name} belongs to another user (uid {found.st_uid}), in a folder others can write: "
            "memory-gate would be writing into a file they can read or replace. Keep memory in a "
            "folder of your own (MEMORY_GATE_DB), or remove the file if it is not yours"
        )
    return None

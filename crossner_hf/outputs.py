"""Writing command outputs so that a failure leaves nothing that looks complete.

- :func:`check_writable`: before any work, the output's folder can be created and written to
  (a read-only location is a one-line error at once, not after minutes of prediction).
- :func:`atomic_output`: write to a hidden temporary name beside the target and move it into place
  only when the block finishes; on an error the temporary file is removed and the target is left
  as it was.
- :func:`staged_outputs`: the same for the final contents of an output folder (a model's weights,
  tokenizer, ``results.json`` and card; a dataset's ``data/`` and card): written into a hidden
  staging folder inside it and moved into place entry by entry on success, the card last, so a
  folder with a ``README.md`` is a finished one. A previous run's card and results leave first, so
  a kill during the moves leaves an unfinished folder, never old results beside new weights; the
  leftovers of killed runs (staging folders, temporary files) are removed by the next run. Files get the usual mode (``umask``), not the
  0600 some writers (``transformers``' ``save_pretrained`` for weights, ``mkstemp``) leave.
- :func:`check_ours`: a non-empty folder that crossner_hf did not make is refused in one line unless the user passes
  ``--overwrite_output_dir``. A folder is ours by the mark our writers leave in it (:data:`OWNED`, a record with
  the id of the run that took it: :func:`mark_ours`), never by the names of the files it holds (a user's
  ``plan.json`` is a user's file); an older version's output folder, from before the mark, is taken once by its
  signature (:func:`legacy_signature`) with one warning line and marked. Of a previous run's outputs only the plain
  names its manifest lists are removed (:func:`plain_names`: ``../x`` removes nothing). The mark and the lock are
  never written through a symbolic link planted in their place (one line instead).
- :func:`replace_folder`: a finished folder takes a folder's place in one step (Linux swaps the two names at once;
  elsewhere two renames), so a reader sees the old folder or the new one, never none.
- :func:`default_output_dir`: the one folder rule of every runner and command given no ``--output_dir``,
  ``outputs/<data name>-<workflow or schedule>``.
- :func:`portable` / :func:`scrub_paths`: what is published (``results.json``, every card) names files by their
  last part, never by an absolute local path, inside strings too.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

def check_writable(path: str | Path, flag: str, *, folder: bool = False) -> Path:
    """The output ``path`` (a file, or with ``folder=True`` a folder) after checking it can be written.

    Raises ``PermissionError`` (one line naming ``flag``, the path and the fix) otherwise.
    """
    path = Path(path)
    target = path if folder else path.parent
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".crossner-write-check-"):
            pass
    except OSError as err:
        raise PermissionError(f"{flag} {path}: cannot write to {target} ({err.strerror or err}); "
                              f"choose a writable location for {flag}.") from None
    return path


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """``with atomic_output(OUT) as tmp:`` write ``tmp``; it becomes ``OUT`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the pid in the name: a later run removes the leftovers of a killed one (clean_leftovers), never a live one's
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


_RENAME_EXCHANGE = 2  # renameat2's flag (Linux 3.15+): both names swap in one step
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the system or
    the file system cannot, so the caller falls back to two renames."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):  # not glibc 2.28+ / not Linux
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    logger.debug("renameat2(RENAME_EXCHANGE) %s <-> %s: %s", a, b, os.strerror(ctypes.get_errno()))
    return False


def replace_folder(new: str | Path, target: str | Path) -> None:
    """``new`` (a finished folder on the same file system) becomes ``target``; the folder that was there is removed.
    Where the system swaps two names in one step (Linux), ``target`` is never missing, not even for a moment."""
    new, target = Path(new), Path(target)
    if target.is_dir() and not target.is_symlink() and _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # the old folder, now under the new one's former name
        return
    if target.exists():
        old = Path(tempfile.mkdtemp(dir=new.parent, prefix=f".{target.name}.old-"))
        os.replace(target, old / target.name)
        os.replace(new, target)
        shutil.rmtree(old, ignore_errors=True)
        return
    os.replace(new, target)


def default_output_dir(data_name: str | Path | None, workflow: str) -> str:
    """``outputs/<data name>-<workflow or schedule>``: the folder every runner and command writes into when it is
    given none. ``data_name``: what the run trains on, as its card names it (a CrossNER domain, ``--data_name`` or
    the dataset folder's name; for DAPT and NER-BERT pre-training the corpus's name, ``corpus:config``), as a
    folder name (its last path part; runs of characters other than letters, digits, ``.``, ``_``, ``-`` as one
    ``-``, so a card's ``Literature NER`` is ``Literature-NER``). ``workflow``: the ``train`` schedule
    (``direct``, ``joint``, ...), else the workflow (``dapt``, ``nerbert``, ``bilstm-crf``, ``cdlm``, ...).

        >>> default_output_dir("politics", "direct"), default_output_dir("corpora:politics-integrated", "dapt")
        ('outputs/politics-direct', 'outputs/corpora-politics-integrated-dapt')
        >>> default_output_dir("/data/my corpus", "nerbert"), default_output_dir(None, "bilstm-crf")
        ('outputs/my-corpus-nerbert', 'outputs/bilstm-crf')
    """
    last = Path(str(data_name).rstrip("/")).name if data_name else ""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", last).strip("-")
    return f"outputs/{stem}-{workflow}" if stem else f"outputs/{workflow}"


FINISHING_FILES = ("results.json", "README.md")
"""Moved into place last, in this order: their presence says the folder is complete."""

STAGING_PREFIX = ".staging-"
MANIFEST = ".outputs.json"
"""The entries the last :func:`staged_outputs` put in the folder: the next one removes those it does not write."""


CHECKPOINT_STARTED = "checkpoint_started.json"
CHECKPOINT_COMPLETE = "checkpoint_complete.json"
"""Written into a ``checkpoint-N`` by :class:`crossner_hf.training.checkpoints.CompletionMarker` before and after
the Trainer saves it: a checkpoint holding neither is not ours, and nothing here deletes it."""

OWNED = ".crossner_hf"
"""The mark our writers leave in a folder they take (:func:`mark_ours`): ``{"written_by": "crossner_hf", "version":
..., "run_id": ...}``. A folder is ours only when it holds this mark, never by the names of the files in it."""
_MARK_WRITER = "crossner_hf"
LEGACY_RESULT_FILES = ("results.json", "adapt.json", "compare.json", "dapt_results.json")
"""The results files an older version's folder holds (``crossner_hf.results.READ_RESULT_FILES``, named here because
that module imports this one): with our schema in them, the folder is an older version's (:func:`legacy_signature`)."""
_LEGACY_SCHEMA = "crossner_hf.results/"
_TRANSIENT = re.compile(r"^(\.lock|\.grid\.lock|\.grid\.owner\.json|\.base-model|\.staging-.*|\.crossner-.*|\..+\.\d+-[^.]*\.tmp)$")
_NEVER_LINKS = (OWNED, ".lock", ".grid.lock")
"""What our writers open in a folder they take (the mark, a run's lock, a grid's lock), never through a symbolic link
planted in its place."""

_RUN_ID: dict[int, str] = {}


def run_id() -> str:
    """This run's id (one a process: a grid's forked or spawned cell is a run of its own), written in the marks."""
    pid = os.getpid()
    if pid not in _RUN_ID:
        _RUN_ID.clear()  # a forked child starts with its parent's: it is another run
        _RUN_ID[pid] = uuid.uuid4().hex
    return _RUN_ID[pid]


def refuse_links(folder: str | Path, flag: str = "--output_dir", names: tuple[str, ...] = _NEVER_LINKS) -> None:
    """One line if one of ``names`` in ``folder`` is a symbolic link: a planted ``.lock`` or ``.crossner_hf``
    pointing at a file elsewhere would have that file truncated or overwritten by the next run."""
    folder = Path(folder)
    for name in names:
        if (folder / name).is_symlink():
            raise FileExistsError(f"{flag} {folder}: {name} is a symbolic link (to {os.readlink(folder / name)}); "
                                  f"crossner_hf never writes through one: remove {folder / name}, then run again.")


def _read_mark(folder: Path) -> dict | str | None:
    """``folder``'s mark: its record (a dict), ``"empty"`` (the empty mark of the first 0.3.0 builds), or None (no
    mark, or a file of that name that is not ours). Read without following a link."""
    path = folder / OWNED
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # absent, a link (ELOOP), unreadable
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, 4097)
    finally:
        os.close(fd)
    if not raw.strip():
        return "empty"
    try:
        record = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    ours = isinstance(record, dict) and record.get("written_by") == _MARK_WRITER and \
        isinstance(record.get("run_id"), str) and bool(record["run_id"])
    return record if ours else None


def mark_ours(folder: str | Path, flag: str = "--output_dir") -> None:
    """Mark ``folder`` as taken by this run (:data:`OWNED`, with :func:`run_id`); written beside and renamed, so
    never through a link planted under its name (refused in one line before)."""
    from importlib import metadata

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    refuse_links(folder, flag, (OWNED,))
    record = _read_mark(folder)
    if isinstance(record, dict) and record.get("run_id") == run_id():
        return
    try:
        version: str | None = metadata.version("crossner_hf")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        version = None
    with atomic_output(folder / OWNED) as tmp:
        tmp.write_text(json.dumps({"written_by": _MARK_WRITER, "version": version, "run_id": run_id()}),
                       encoding="utf-8")


def legacy_signature(folder: str | Path) -> str | None:
    """What shows ``folder`` is an output folder an older crossner_hf wrote, before the mark held a run id: the empty
    mark of the first 0.3.0 builds, or a results file carrying our schema (``crossner_hf.results/N``) beside no
    README.md or our card (every card names crossner_hf: a user's README beside a copy of our results is theirs);
    None when nothing does. Older layouts (0.1's results without a schema) are not recognised:
    ``--overwrite_output_dir``."""
    folder = Path(folder)
    if _read_mark(folder) == "empty":
        return f"its empty {OWNED} mark"
    readme = folder / "README.md"
    if readme.is_symlink() or (readme.exists() and not _our_card(readme)):
        return None
    for name in LEGACY_RESULT_FILES:
        path = folder / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 64 * 1024 * 1024:
            try:
                schema = json.loads(path.read_text(encoding="utf-8")).get("schema")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(schema, str) and schema.startswith(_LEGACY_SCHEMA):
                return f"its {name} ({schema})"
    return None


def _our_card(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as card:
            text = card.read(256 * 1024)
    except OSError:
        return False
    return "crossner_hf" in text or "crossner-hf" in text


_WARNED_LEGACY: set[str] = set()


def is_ours(folder: str | Path) -> bool:
    """Whether ``folder`` holds our mark (:data:`OWNED`), or is an older version's output folder
    (:func:`legacy_signature`: taken as ours with one warning line; the run that takes it marks it)."""
    folder = Path(folder)
    if isinstance(_read_mark(folder), dict):
        return True
    signature = legacy_signature(folder)
    if signature is None:
        return False
    if str(folder.resolve()) not in _WARNED_LEGACY:
        _WARNED_LEGACY.add(str(folder.resolve()))
        logger.warning("%s: an older crossner_hf's output folder (%s, no run mark): taken as ours and marked now.",
                       folder, signature)
    return True


def check_ours(folder: str | Path, flag: str = "--output_dir", *, overwrite: bool = False,
               fix: str | None = "--overwrite_output_dir true", claim: bool = False) -> None:
    """Refuse (one line) to write into a non-empty ``folder`` that crossner_hf did not make (no mark of ours,
    :func:`is_ours`, and entries other than our own transient ones), unless ``overwrite``: a user's files there are
    never replaced or removed by a run they did not ask to write over them. A planted link under the name of the
    mark or the lock is refused, ``overwrite`` or not. ``claim``: mark the folder as this run's (:func:`mark_ours`)."""
    folder = Path(folder)
    if folder.is_dir():
        refuse_links(folder, flag)
        if not overwrite and not is_ours(folder):
            _refuse_foreign(folder, flag, fix)
    if claim:  # the folder is this run's from now: what it writes before its final outputs (reports) is ours
        mark_ours(folder, flag)


def _refuse_foreign(folder: Path, flag: str, fix: str | None) -> None:
    foreign = list(itertools.islice((p.name for p in folder.iterdir() if not _TRANSIENT.match(p.name)), 4))
    if foreign:
        shown = ", ".join(n if len(n) <= 40 else n[:37] + "..." for n in sorted(foreign)[:3])
        how = (f", or pass {fix} to write into it (the entries this run writes replace those of the same name)"
               if fix else "")
        raise FileExistsError(f"{flag} {folder}: holds files crossner_hf did not write ({shown}"
                              f"{', ...' if len(foreign) > 3 else ''}); choose a new or empty folder{how}.")


def plain_names(entries: Any, folder: Path) -> list[str]:
    """The manifest's entries that are plain names of ``folder``'s entries (not ``..``, ``a/b``, ``/x``); the others
    are logged and ignored, so a damaged or edited manifest never removes anything outside the folder."""
    names = []
    for name in entries if isinstance(entries, list) else []:
        if (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name
                and "\0" not in name and Path(name).name == name):
            names.append(name)
        else:
            logger.warning("%s: ignoring the entry %.60r (not a plain name in the folder).", folder / MANIFEST, name)
    return names


def clean_leftovers(folder: str | Path) -> list[Path]:
    """Remove the staging folders and temporary files that killed runs left in ``folder`` (their writer's pid,
    in the name, is no longer running); returns what was removed."""
    from crossner_hf.executors import pid_alive

    folder = Path(folder)
    removed = []
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        match = (re.match(rf"^{re.escape(STAGING_PREFIX)}(\d+)-", entry.name) if entry.is_dir()
                 else re.match(r"^\..+\.(\d+)-[^.]*\.tmp$", entry.name))
        if match and int(match.group(1)) != os.getpid() and not pid_alive(int(match.group(1))):
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


@contextmanager
def staged_outputs(folder: str | Path, *, overwrite: bool = False, flag: str = "--output_dir") -> Iterator[Path]:
    """``with staged_outputs(OUT) as stage:`` write ``stage``; its entries replace ``OUT``'s on success.

    A folder entry (``data/``) replaces the old one whole; of the rest of ``OUT`` only what the previous
    run's manifest (:data:`MANIFEST`) lists is removed, everything else (checkpoints, per-seed runs, logs, a
    user's files) is left alone. A non-empty ``OUT`` that crossner_hf did not make is refused unless
    ``overwrite`` (:func:`check_ours`). On an error the staging folder is removed and ``OUT`` keeps what it
    had. Call it on one process only (the one that writes the outputs).
    """
    folder = Path(folder)
    if not _holds(folder):  # a run holding the folder checked it when it took it
        check_ours(folder, flag, overwrite=overwrite)
    mark_ours(folder, flag)  # every writer's folder carries the mark: the next run's check reads it, not file names
    clean_leftovers(folder)
    stage = Path(tempfile.mkdtemp(dir=folder, prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
    try:
        yield stage
        # from here the folder must not look finished until the new run's finishing files are in: the old
        # ones go first (a kill during the moves leaves an unfinished folder, never old results beside new
        # weights), then whatever the previous outputs had that these do not
        new = {p.name for p in stage.iterdir()}
        try:
            previous = set(plain_names(json.loads((folder / MANIFEST).read_text()), folder))
        except (OSError, ValueError):
            previous = set()
        for name in FINISHING_FILES:
            if name in new | previous:  # a finishing file this run neither writes nor owned stays (a user's)
                (folder / name).unlink(missing_ok=True)
        for name in previous - new:
            old = folder / name
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
        (stage / MANIFEST).write_text(json.dumps(sorted(new)))
        entries = sorted(stage.iterdir(), key=lambda p: (p.name in FINISHING_FILES,
                                                         FINISHING_FILES.index(p.name) if p.name in FINISHING_FILES else 0,
                                                         p.name))
        file_mode = 0o666 & ~_umask()
        for entry in entries:
            for path in [entry, *entry.rglob("*")] if entry.is_dir() else [entry]:
                os.chmod(path, (0o777 & ~_umask()) if path.is_dir() else file_mode)
            target = folder / entry.name
            if entry.is_dir() and target.exists():
                replace_folder(entry, target)  # in one step where the system can; the old folder is removed
            else:
                os.replace(entry, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def usual_modes(path: str | Path) -> None:
    """Give ``path`` (a file, or a folder and all below it) the usual modes under the ``umask``: writers such as
    ``save_pretrained`` and ``mkstemp`` leave 0600, which a teammate on shared storage cannot read."""
    path = Path(path)
    mask = _umask()
    for entry in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if not entry.is_symlink():
            os.chmod(entry, (0o777 if entry.is_dir() else 0o666) & ~mask)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


LOCK = ".lock"
RUN_SETTINGS = ".run_settings.json"
"""The settings that decide a run's result, recorded in its folder so a resume can check it resumes the same run."""

COSMETIC_SETTINGS = frozenset({
    "output_dir", "logging_dir", "logging_strategy", "logging_steps", "logging_first_step", "logging_nan_inf_filter",
    "report_to", "disable_tqdm", "resume_from_checkpoint", "overwrite_output_dir", "push_to_hub", "hub_model_id",
    "hub_strategy", "hub_token", "hub_private_repo", "hub_always_push", "hub_revision", "keep_checkpoints",
    "save_total_limit", "dataloader_num_workers", "dataloader_pin_memory", "dataloader_persistent_workers",
    "dataloader_prefetch_factor", "per_device_eval_batch_size", "run_name", "log_level", "log_level_replica",
    "log_on_each_node", "save_on_each_node", "project", "trackio_space_id", "preprocessing_num_workers",
    "data_dir", "nltk_data", "work_dir",
})
"""Settings a resume may change: where things are written and logged, not what is trained."""


@contextmanager
def run_lock(folder: str | Path, flag: str = "--output_dir") -> Iterator[None]:
    """Hold ``folder``'s lock while a run writes into it: a second live run into the same folder is refused in one
    line, from another process or another thread of this one (re-entrant within the holding thread only: a runner
    around its stages). The lock is an ``fcntl`` lock (``filelock``, as ``huggingface_hub`` locks its cache), which
    the operating system releases when the holder dies, so a killed run never leaves it stuck. A ``.lock`` or
    ``.crossner_hf`` that is a symbolic link is refused in one line, never written through."""
    from filelock import FileLock, Timeout

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key = str(folder.resolve())
    busy = (f"{flag} {folder}: another run is writing into this folder now (it holds {folder / LOCK}); "
            f"wait for it to finish or choose another {flag}.")
    with _HELD_GUARD:
        holder = _HELD.get(key)
        if holder is not None and holder[0] != threading.get_ident():  # another thread of this process
            raise ValueError(busy)
        if holder is not None:  # this thread holds it already: the outer hold covers it
            _HELD[key] = (holder[0], holder[1] + 1)
    if holder is not None:
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD[key] = (holder[0], _HELD[key][1] - 1)
        return
    refuse_links(folder, flag)
    lock = FileLock(str(folder / LOCK), timeout=0)
    with _HELD_GUARD:  # taken under the guard: two threads never both pass the check above and then both lock
        if key in _HELD:
            raise ValueError(busy)
        try:
            lock.acquire()
        except Timeout:
            raise ValueError(busy) from None
        except OSError as err:  # a link planted between the check and the open (O_NOFOLLOW: ELOOP)
            raise FileExistsError(f"{flag} {folder}: cannot open {folder / LOCK} ({err.strerror or err}); remove it, "
                                  "then run again.") from None
        _HELD[key] = (threading.get_ident(), 1)
    try:
        mark_ours(folder, flag)
        yield
    finally:
        with _HELD_GUARD:
            del _HELD[key]
        lock.release()


_HELD: dict[str, tuple[int, int]] = {}
"""The folders whose lock this process holds: the holding thread and its depth (an fcntl lock is not re-entrant
across two opens of one file, and a second thread must be refused, not let in)."""
_HELD_GUARD = threading.Lock()


def _holds(folder: Path) -> bool:
    """Whether this thread holds ``folder``'s lock."""
    holder = _HELD.get(str(folder.resolve())) if folder.is_dir() else None
    return holder is not None and holder[0] == threading.get_ident()


@contextmanager
def held_output_dir(folder: str | Path, *, overwrite: bool, flag: str = "--output_dir") -> Iterator[None]:
    """A runner's hold on ``folder`` from its first write to its last: refused if it holds a user's files
    (:func:`check_ours`), then locked (:func:`run_lock`) until the outputs are written."""
    check_ours(folder, flag, overwrite=overwrite)
    with run_lock(folder, flag):
        yield


def decisive_settings(values: dict) -> dict:
    """``values`` without the :data:`COSMETIC_SETTINGS`, as JSON-ready values."""
    return {k: json.loads(json.dumps(v, default=str)) for k, v in sorted(values.items())
            if k not in COSMETIC_SETTINGS and not k.startswith("_")}


def check_run_identity(folder: str | Path, settings: dict, *, resume: bool, overwrite: bool = False) -> None:
    """Record ``settings`` (from :func:`decisive_settings`) in ``folder``; when resuming, first check they are the
    recorded run's: a resume with other settings would continue another run's checkpoints under this run's
    name, so it is refused in one line naming the flags that differ."""
    folder = Path(folder)
    path = folder / RUN_SETTINGS
    if resume and not overwrite and path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = None
        if isinstance(old, dict) and old != settings:
            changed = sorted(set(old) | set(settings), key=str)
            diffs = [f"--{k} {old.get(k)!r} (now {settings.get(k)!r})" for k in changed if old.get(k) != settings.get(k)]
            raise ValueError(f"--resume_from_checkpoint: {folder} holds a run made with {', '.join(diffs)}; resume "
                             "it with the same flags, or pass --overwrite_output_dir true to start afresh there.")
    with atomic_output(path) as tmp:
        tmp.write_text(json.dumps(settings, indent=1, sort_keys=True), encoding="utf-8")


@contextmanager
def claimed_output_dir(folder: str | Path, settings: dict, *, resume: bool, overwrite: bool,
                       stale: tuple[str, ...] = (), main: bool = True) -> Iterator[None]:
    """A run's hold on its output folder, the one home of what every trainer does before it starts: the lock (a
    second live run into the folder is refused), ``--overwrite_output_dir``'s removal of the earlier run's
    ``stale`` entries (glob patterns: its checkpoints), and the check that a resume continues the run the folder
    holds (``settings``: :func:`decisive_settings` plus what the config does not hold, such as the data). Only
    the main process (``main``) takes it; the others run under its hold."""
    if not main:
        yield
        return
    folder = Path(folder)
    check_ours(folder, overwrite=overwrite)
    with run_lock(folder):
        if overwrite:
            old_entries = [old for pattern in stale for old in folder.glob(pattern)]
            for old in old_entries:  # all checked before any is removed: a refusal leaves everything as it was
                refuse_foreign_checkpoints(old, "--overwrite_output_dir")
            for old in old_entries:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
        check_run_identity(folder, settings, resume=resume, overwrite=overwrite)
        yield


def ours_checkpoint(path: Path) -> bool:
    """Whether the ``checkpoint-N`` folder ``path`` was written by a crossner_hf run (it holds one of our markers)."""
    return (path / CHECKPOINT_STARTED).is_file() or (path / CHECKPOINT_COMPLETE).is_file()


def refuse_foreign_checkpoints(path: Path, flag: str) -> None:
    """One line if ``path`` is, or directly holds, a ``checkpoint-N`` folder without our markers (a plain
    ``Trainer``'s, an earlier version's, another program's): it is never removed."""
    candidates = [path] if path.name.startswith("checkpoint-") else (
        sorted(path.glob("checkpoint-*")) if path.is_dir() else [])
    for checkpoint in candidates:
        if checkpoint.is_dir() and not ours_checkpoint(checkpoint):
            raise FileExistsError(f"{flag}: {checkpoint} has no crossner_hf checkpoint marker ({CHECKPOINT_COMPLETE}) "
                                  "and is never deleted; move it out of the folder (or resume from it with "
                                  "--resume_from_checkpoint), then run again.")


def read_json(path: str | Path, fix: str = "delete it to redo the step that wrote it") -> Any:
    """``path``'s JSON; a damaged file (a kill while it was written by an older version, a hand edit) is one line
    naming the file, where the parser stopped, and the fix."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); {fix}.") from None


_ABSOLUTE = re.compile(r"(?<![\w.:/~\\-])(?:/|[A-Za-z]:\\)(?:[^\s/\\'\"`()<>\[\]{},;:|]+[/\\])+"
                       r"[^\s/\\'\"`()<>\[\]{},;:|]*")
"""An absolute path inside a text (``/a/b...`` or ``C:\\a\\...``, two parts at least; not a URL's ``//``)."""


def scrub_paths(text: str) -> str:
    """``text`` with each absolute local path in it replaced by its last part (an error line, a setting)."""
    return _ABSOLUTE.sub(lambda m: re.split(r"[/\\]", m.group(0).rstrip("/\\"))[-1] or m.group(0), text)


def portable(value: Any) -> Any:
    """``value`` (a results record) with every absolute local path, whole values and paths inside strings
    (an error text), replaced by its last part, so a file or card that is published (``results.json`` and
    ``README.md`` go to the Hub with the model) names folders, never someone's home."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and os.path.isabs(value) and "\n" not in value:
        return Path(value).name or value
    if isinstance(value, str):
        return scrub_paths(value)
    return value

"""Pushing a model or dataset folder to the Hugging Face Hub, with failures as one clear line.

:func:`push_to_hub` creates the repository if needed and uploads the folder through
``huggingface_hub`` (``HfApi.create_repo`` + ``upload_folder``; Xet storage when ``hf_xet``
is installed and the endpoint has it, Git LFS otherwise: an endpoint that answers 404 for a Xet
token gets the same files over Git LFS, with a warning). The endpoint is ``HF_ENDPOINT`` as set when the push
runs (default ``https://huggingface.co``); the token is ``token=``, else ``HF_TOKEN``, else
the one ``hf auth login`` stored.

Any failure (server unreachable, 401/403, 404, 5xx, a malformed answer) raises
:class:`PushError`, a single line naming the folder, the repo, the endpoint, the HTTP status
and what to do; the token never appears in it. The local folder is only read.

Example:
    >>> push_to_hub("outputs/politics-direct", "me/crossner-politics")   # doctest: +SKIP
    'https://huggingface.co/me/crossner-politics/commit/...'
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from crossner_hf.encoders import hub_offline

logger = logging.getLogger(__name__)

REPO_TYPES = ("model", "dataset")
_HINTS = {
    401: "the token was refused: set HF_TOKEN or run `hf auth login` with a write token",
    403: "the token may not write to this repo: use a write token, or a repo id under your own name",
    404: "the endpoint has no such API: check HF_ENDPOINT",
    409: "the repo exists with another type: pass --repo_type",
}


class PushError(RuntimeError):
    """A failed push; ``str(err)`` is one line without the token."""


def detect_repo_type(folder: str | Path) -> str:
    """``model`` for a folder with ``config.json`` + weights, ``dataset`` for Parquet data or a dataset card."""
    folder = Path(folder)
    weights = any(folder.glob("*.safetensors")) or any(folder.glob("*.bin"))
    if (folder / "config.json").is_file() and weights:
        return "model"
    if any(folder.glob("data/**/*.parquet")) or any(folder.glob("*.parquet")):
        return "dataset"
    raise ValueError(
        f"{folder} holds neither a model (config.json + weights) nor a dataset (data/*.parquet); "
        "pass repo_type='model' or 'dataset' (--repo_type)."
    )


RUN_IGNORE_PATTERNS = ["seed-*/**", "checkpoint-*/**", "**/checkpoint-*/**", "checkpoint/**",
                       "training_args.bin", "**/training_args.bin", ".*.tmp", ".staging-*/**", "best/**",
                       "round-*/**", ".base-model/**", ".best.*/**", ".outputs.json", ".lock", ".run_settings.json",
                       ".crossner_hf"]
"""What a run folder keeps local when pushed, by ``--push_to_hub`` or ``crossner-hf push``: per-seed copies
of the weights, checkpoints, the RNN loop's ``best/`` copy (the kept model is the folder itself) and
self-training rounds, the pickled ``training_args.bin`` and unfinished temporary outputs."""


def push_to_hub(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str | None = None,
    private: bool = False,
    token: str | None = None,
    commit_message: str | None = None,
    revision: str | None = None,
    ignore_patterns: list[str] | None = RUN_IGNORE_PATTERNS,
) -> str:
    """Create ``repo_id`` if needed and upload ``folder``; returns the commit URL.

    ``ignore_patterns`` (globs relative to ``folder``; default :data:`RUN_IGNORE_PATTERNS`) are left
    out of the upload.
    """
    from huggingface_hub import HfApi, constants

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder; pass the output folder of a training recipe or dataset builder.")
    if not (folder / "README.md").is_file():
        raise ValueError(
            f"{folder} has no README.md card; push the output folder of a training recipe or dataset builder (they write one)."
        )
    repo_type = repo_type or detect_repo_type(folder)
    if repo_type not in REPO_TYPES:
        raise ValueError(f"repo_type={repo_type!r}: choose one of {', '.join(REPO_TYPES)}.")
    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    secret = token or os.environ.get("HF_TOKEN") or ""
    where = f"push of {folder} to {repo_type} repo {repo_id} at {endpoint} failed"
    if hub_offline():
        raise PushError(f"{where}: HF_HUB_OFFLINE is set; unset it to push.")
    api = HfApi(endpoint=endpoint, token=token)

    def upload():
        return api.upload_folder(
            folder_path=str(folder), repo_id=repo_id, repo_type=repo_type, revision=revision,
            ignore_patterns=ignore_patterns,
            commit_message=commit_message or f"Upload {repo_type} folder with crossner_hf",
        )

    try:
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
        try:
            commit = upload()
        except Exception as err:  # noqa: BLE001 - only a missing Xet service is retried; the rest re-raised
            if not _no_xet_service(err):
                raise
            # huggingface_hub uploads through Xet whenever hf_xet is installed; an endpoint without Xet
            # storage (a self-hosted or older Hub) answers 404 for the Xet token. Git LFS still works there.
            logger.warning("%s has no Xet storage (404 on its xet-write-token API); uploading over Git LFS "
                           "instead (set HF_HUB_DISABLE_XET=1 to go there directly).", endpoint)
            commit = _without_xet(upload)
    except Exception as err:  # noqa: BLE001 - every failure becomes one PushError line, re-raised below
        raise PushError(_redact(f"{where}: {_describe(err)}", secret)) from None
    url = getattr(commit, "commit_url", None) or str(commit)
    logger.info("Pushed %s to the %s repo %s: %s", folder, repo_type, repo_id, url)
    return url


def _no_xet_service(err: BaseException) -> bool:
    """Whether ``err`` (or an error it wraps) is the endpoint's 404 for a Xet access token."""
    chain, seen = err, set()
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        text = str(chain)
        if "xet-write-token" in text and "404" in text:
            return True
        chain = chain.__cause__ or chain.__context__
    return False


def _without_xet(call):
    """``call()`` with huggingface_hub's Xet switch off (what ``HF_HUB_DISABLE_XET=1`` sets at import)."""
    from huggingface_hub import constants

    before = constants.HF_HUB_DISABLE_XET
    constants.HF_HUB_DISABLE_XET = True  # read at call time by huggingface_hub.utils.is_xet_available
    try:
        return call()
    finally:
        constants.HF_HUB_DISABLE_XET = before


def _describe(err: BaseException) -> str:
    """``HTTP 401 (hint)`` for HTTP errors (also when wrapped, as LFS upload errors are), else the first line."""
    first = (str(err).strip().splitlines() or [""])[0]
    chain, seen = err, set()
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        status = getattr(getattr(chain, "response", None), "status_code", None)
        if status is not None:
            hint = _HINTS.get(status) or ("the server failed; try again later" if status >= 500 else "")
            during = f" during: {first}" if chain is not err and first else ""
            return f"HTTP {status}" + (f" ({hint})" if hint else "") + during
        chain = chain.__cause__ or chain.__context__
    name = type(err).__name__
    if "connect" in name.lower() or "connect" in first.lower():
        return f"cannot connect ({first or name}); check HF_ENDPOINT and the network"
    return f"{name}: {first}"


def _redact(message: str, secret: str) -> str:
    message = " ".join(message.split())
    return message.replace(secret, "***") if secret else message

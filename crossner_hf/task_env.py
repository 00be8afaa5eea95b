"""A task's environment, built where the task runs: the one allow-list of every executor.

A grid cell's process (:mod:`crossner_hf.grid`, on :mod:`crossner_hf.executors`) never gets the whole environment
of the machine it runs on, which would hand it every variable, tokens included: :func:`task_environment` keeps the
allow-list (:data:`ENV_NAMES`, :data:`ENV_PREFIXES`: data and cache locations, offline switches, thread and path
variables, proxies and certificate bundles, CUDA's and NCCL's settings), tokens only for a task that pushes to the
Hub, its GPUs and its threads. It is applied on the machine that runs the task, to that machine's own environment:
this one (``--executor local``), a Slurm node, a Ray worker. A task on another machine takes only the driver's run
settings over it (:func:`driver_settings`: ``HF_*``, ``CROSSNER_*``, ``TRANSFORMERS_*``; never its ``PATH`` or
``HOME``). :func:`secret_name` is the one rule of what is a secret, for environments, records and logs alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ENV_PREFIXES = ("HF_", "HUGGINGFACE_", "CROSSNER_", "TRANSFORMERS_", "TORCH_", "PYTORCH_", "TOKENIZERS_", "LC_",
                "SLURM_", "SUBMITIT_", "NCCL_")
ENV_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "PYTHONPATH",
    "PYTHONHASHSEED", "PYTHONUNBUFFERED", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "NLTK_DATA",
    "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER", "CUBLAS_WORKSPACE_CONFIG",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
    # a cluster behind a proxy, or with its own certificate authority, reaches the Hub only with these
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "HUGGING_FACE_HUB_TOKEN",  # huggingface_hub's older token name (a secret: only for a pushing task)
})
"""What of the environment a task gets (names, and names starting with :data:`ENV_PREFIXES`): the data and cache
locations, the offline switches, thread and path variables, proxies and certificate bundles, CUDA's and NCCL's
settings. ``CROSSNER_CELL_ENV=A,B`` adds names. Applied where the task runs (:func:`task_environment`): on this
machine, on a Slurm node, on a Ray worker, each to its own environment."""

DRIVER_PREFIXES = ("HF_", "HUGGINGFACE_", "HUGGING_FACE_", "CROSSNER_", "TRANSFORMERS_")
"""What a task on another machine (a Ray worker) takes of the driver's environment over its own: the run's Hub,
cache and crossner_hf settings (:func:`driver_settings`); its paths, libraries and home stay the worker's."""

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS")


def secret_name(name: str) -> bool:
    """Whether a variable (``HF_TOKEN``, ``OPENAI_API_KEY``), flag (``--hub_token``) or setting name carries a
    secret, by whole words: ``hub_token`` does, ``TOKENIZERS_PARALLELISM`` and ``tokens_column`` do not. The one
    rule for what a cell's environment leaves out and what its records and logs show as ``***``."""
    words = name.lstrip("-").lower().replace("-", "_").split("_")
    return bool({"token", "password", "secret", "apikey"} & set(words)) or words[-2:] == ["api", "key"]


def _extra_names(env: Mapping[str, str]) -> set[str]:
    return {n.strip() for n in env.get("CROSSNER_CELL_ENV", "").split(",") if n.strip()}


def driver_settings(driver: Mapping[str, str], *, pushes: bool = False) -> dict[str, str]:
    """What a task on another machine takes of the driver's environment (``driver``): its :data:`DRIVER_PREFIXES`
    variables (``HF_HOME``, ``HF_HUB_OFFLINE``, ``CROSSNER_DATA_DIR``, ...) and the names ``CROSSNER_CELL_ENV``
    adds; tokens (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``) only when the task pushes to the Hub. Shipped with the
    task and laid over the allow-list of the worker's own environment (:func:`task_environment`, ``settings``)."""
    extra = _extra_names(driver)
    return {k: v for k, v in driver.items()
            if (k.startswith(DRIVER_PREFIXES) or k in extra) and (pushes or k in extra or not secret_name(k))}


def task_environment(base: Mapping[str, str], *, gpus: Sequence[str | int] | None = None, threads: int | None = None,
                     pushes: bool = False, settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of one task's process, built where it runs: the allow-list of ``base`` (that machine's own
    environment; never its whole environment, which would hand every variable, tokens included, to the task),
    tokens only when the task pushes to the Hub, then ``settings`` over it (a Ray task's :func:`driver_settings`),
    ``CUDA_VISIBLE_DEVICES`` set to the task's own GPUs (``None``: left as ``base`` has it; ``[]``: none) and every
    thread variable set to ``threads``."""
    extra = _extra_names({**base, **(settings or {})})
    env = {k: v for k, v in base.items()
           if (k in ENV_NAMES or k in extra or k.startswith(ENV_PREFIXES)) and (pushes or k in extra or not secret_name(k))}
    env.update(settings or {})
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    elif "CUDA_VISIBLE_DEVICES" in base:
        env["CUDA_VISIBLE_DEVICES"] = base["CUDA_VISIBLE_DEVICES"]
    if threads is not None:
        env.update({name: str(threads) for name in THREAD_VARIABLES})
    return env

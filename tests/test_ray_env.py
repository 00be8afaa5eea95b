"""Issue 66: a Ray cell's environment is built on its worker, not shipped from the driver's machine.

A Ray cluster is started here (``ray start --head --block``) with an environment of its own, as a cluster node has:
another ``PATH``, ``HOME``, ``LD_LIBRARY_PATH``, its proxies and certificate bundle, CUDA's and NCCL's settings and a
Hub token of its own. The grid's driver, with its own environment, joins it by address (as ``RAY_ADDRESS`` does)
and runs two probe cells, which write the environment their process got.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from crossner_hf.executors import ExecutorOptions
from crossner_hf.grid import Cell, run_grid

pytestmark = pytest.mark.xdist_group("ray")  # one Ray cluster at a time

PROBE = """
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--output_dir") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "env.json").write_text(json.dumps(dict(os.environ)))
(out / "results.json").write_text(json.dumps({"seconds": 1.0}))
"""


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _wait_for(condition, what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def worker_cluster(tmp_path):
    """A Ray head started with the worker's environment; yields (its address, that environment). Its processes are
    ended by their ids when the test ends (never ``ray stop``, which would end every Ray cluster of this user)."""
    import psutil

    pytest.importorskip("ray")
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.is_file():
        pytest.skip("no `ray` command beside this Python")
    home, bin_dir = tmp_path / "worker-home", tmp_path / "worker-bin"
    home.mkdir()
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(home), "LD_LIBRARY_PATH": "/opt/worker-lib",
        "HF_HOME": "/worker/hf-home", "HF_TOKEN": "hf_token_of_the_worker", "CROSSNER_WORKER_MARK": "the worker's",
        "HTTPS_PROXY": "http://proxy.worker:3128", "https_proxy": "http://proxy.worker:3128",
        "NO_PROXY": "localhost", "CURL_CA_BUNDLE": "/etc/worker-ca.pem", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "NCCL_SOCKET_IFNAME": "ib0", "WORKER_ONLY_VARIABLE": "x",
    })
    port, agent, agent_grpc, runtime_agent, metrics = _free_ports(5)
    temp_dir = Path(f"/tmp/rayenv-{os.getpid()}-{port}")  # short: Ray's socket paths have a length limit
    head = subprocess.Popen(
        [str(ray_bin), "start", "--head", "--block", f"--port={port}", f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
         f"--runtime-env-agent-port={runtime_agent}", f"--metrics-export-port={metrics}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp_dir}",
         f"--object-store-memory={100 * 1024 * 1024}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        for line in head.stdout:
            lines.append(line)
            if "Ray runtime started" in line:
                started.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        _wait_for(lambda: started.is_set() or head.poll() is not None, "the Ray head to start")
        assert started.is_set(), "".join(lines)[-3000:]
        yield f"127.0.0.1:{port}", env
    finally:
        try:
            processes = psutil.Process(head.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            processes = []
        head.send_signal(signal.SIGTERM)  # --block: the head stops the processes it started
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        _, alive = psutil.wait_procs(processes, timeout=30)
        for process in alive:  # what did not stop with the head: by its id
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        import shutil

        shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_ray_cell_gets_its_workers_environment_and_the_drivers_run_settings(tmp_path, worker_cluster,
                                                                               monkeypatch):
    address, worker = worker_cluster
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    for name in ("RAY_ADDRESS", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "CURL_CA_BUNDLE", "CUBLAS_WORKSPACE_CONFIG",
                 "NCCL_SOCKET_IFNAME", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "driver-hf-home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CROSSNER_DRIVER_MARK", "the driver's")
    monkeypatch.setenv("HF_TOKEN", "hf_token_of_the_driver")
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_old_token_name_of_the_driver")
    monkeypatch.setenv("DRIVER_ONLY_VARIABLE", "x")
    program = (sys.executable, str(probe))
    cells = [Cell("plain", "probe", "r", "c", program=program),
             Cell("push", "probe", "r", "c", program=program, settings={"push_to_hub": True})]
    assert cells[1].pushes and not cells[0].pushes
    out = tmp_path / "grid"
    assert run_grid(cells, out, ExecutorOptions(executor="ray", ray_address=address)) == {"plain": "done",
                                                                                         "push": "done"}
    plain, push = (json.loads((c.folder(out) / "env.json").read_text()) for c in cells)
    for env in (plain, push):
        # the worker's own machine: its paths, home, libraries, proxies, certificate bundle, CUDA and NCCL settings
        assert env["PATH"].split(os.pathsep)[0] == worker["PATH"].split(os.pathsep)[0], env["PATH"]
        assert env["HOME"] == worker["HOME"] and env["LD_LIBRARY_PATH"] == "/opt/worker-lib"
        for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "CURL_CA_BUNDLE", "CUBLAS_WORKSPACE_CONFIG",
                     "NCCL_SOCKET_IFNAME", "CROSSNER_WORKER_MARK"):
            assert env[name] == worker[name], name
        # the driver's run settings over the worker's
        assert env["HF_HOME"] == str(tmp_path / "driver-hf-home") and env["HF_HUB_OFFLINE"] == "1"
        assert env["CROSSNER_DRIVER_MARK"] == "the driver's"
        assert not {"WORKER_ONLY_VARIABLE", "DRIVER_ONLY_VARIABLE"} & set(env)  # neither outside the allow-list
    assert not {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} & set(plain)  # no token, the worker's nor the driver's
    assert push["HF_TOKEN"] == "hf_token_of_the_driver"  # a pushing cell: the driver's tokens, both names
    assert push["HUGGING_FACE_HUB_TOKEN"] == "hf_old_token_name_of_the_driver"


def test_the_driver_ships_only_its_run_settings_and_tokens_only_to_a_pushing_cell():
    """The one allow-list (``task_environment``, applied where the cell runs) keeps proxies, certificate bundles,
    CUDA's and NCCL's settings; what travels from the driver (``driver_settings``) is its Hub / cache / crossner_hf
    settings, the names ``CROSSNER_CELL_ENV`` adds, and both token names only for a pushing cell."""
    from crossner_hf.task_env import driver_settings, task_environment

    driver = {"PATH": "/driver/bin", "HOME": "/driver", "LD_LIBRARY_PATH": "/driver/lib", "HF_HOME": "/driver/hf",
              "HUGGINGFACE_HUB_CACHE": "/driver/hub", "TRANSFORMERS_OFFLINE": "1", "CROSSNER_DATA_DIR": "/d",
              "HF_TOKEN": "hf_a", "HUGGING_FACE_HUB_TOKEN": "hf_b", "CROSSNER_CELL_ENV": "WANDB_PROJECT",
              "WANDB_PROJECT": "p", "HTTPS_PROXY": "http://driver-proxy"}
    shipped = driver_settings(driver)
    assert shipped == {"HF_HOME": "/driver/hf", "HUGGINGFACE_HUB_CACHE": "/driver/hub", "TRANSFORMERS_OFFLINE": "1",
                       "CROSSNER_DATA_DIR": "/d", "CROSSNER_CELL_ENV": "WANDB_PROJECT", "WANDB_PROJECT": "p"}
    pushing = driver_settings(driver, pushes=True)
    assert pushing["HF_TOKEN"] == "hf_a" and pushing["HUGGING_FACE_HUB_TOKEN"] == "hf_b"
    worker = {"PATH": "/w/bin", "HOME": "/w", "HF_HOME": "/w/hf", "HF_TOKEN": "hf_w", "http_proxy": "http://p",
              "HTTPS_PROXY": "http://p", "NO_PROXY": "local", "no_proxy": "local", "SSL_CERT_FILE": "/ca",
              "SSL_CERT_DIR": "/cas", "REQUESTS_CA_BUNDLE": "/ca", "CURL_CA_BUNDLE": "/ca",
              "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "NCCL_DEBUG": "INFO", "RANDOM": "x"}
    env = task_environment(worker, settings=shipped, threads=2)
    assert env["PATH"] == "/w/bin" and env["HOME"] == "/w" and env["HF_HOME"] == "/driver/hf"
    assert env["WANDB_PROJECT"] == "p" and "RANDOM" not in env and "HF_TOKEN" not in env
    assert {k: env[k] for k in worker if k not in ("PATH", "HOME", "HF_HOME", "HF_TOKEN", "RANDOM")} == \
        {k: v for k, v in worker.items() if k not in ("PATH", "HOME", "HF_HOME", "HF_TOKEN", "RANDOM")}
    assert task_environment(worker, settings=pushing, pushes=True)["HF_TOKEN"] == "hf_a"  # the driver's, not the node's

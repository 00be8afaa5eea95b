"""Runnable shim over `crossner_hf.commands.bilstm_crf` (the same command as `crossner-hf bilstm-crf`).

Run with `--help` for the flags; see that module's docstring for examples.
"""

from crossner_hf.cli import shim_exit

if __name__ == "__main__":
    shim_exit("bilstm-crf")

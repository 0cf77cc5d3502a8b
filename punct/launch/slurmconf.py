"""conf/slurm.conf: how the launcher's generic options become sbatch options.

One directive per line (``#`` starts a comment)::

    command sbatch --export=ALL        # the submit command and flags for every job
    option num-threads=* --cpus-per-task=$0
    option gpu=0                       # an exact value: no flags
    option gpu=* --gres=gpu:$0         # any other value; $0 is replaced by the value
    default gpu=0                      # value used when the option is not given
    srun srun --kill-on-bad-exit=1     # how --ntasks N > 1 runs the command in the job
    poll_interval 5                    # at most this many seconds between squeue polls
    log_wait 30                        # how long to wait for a finished job's log (NFS)

Option names are those of ``launch.sh`` (num-threads, mem, gpu, time, partition,
ntasks; ``_`` and ``-`` are the same). An exact-value rule wins over ``*``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from punct.errors import MissingDataError, PunctInputError
from punct.launch.jobs import LaunchError

OPTION_NAMES = ("num-threads", "mem", "gpu", "time", "partition", "ntasks")
"""The generic options a rule may map."""


@dataclass(frozen=True)
class SlurmConfig:
    """A parsed slurm.conf."""

    path: str = "<built-in>"
    command: tuple[str, ...] = ("sbatch",)
    rules: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)
    srun: tuple[str, ...] = ("srun", "--kill-on-bad-exit=1")
    poll_interval: float = 5.0
    log_wait: float = 30.0

    def flags(self, values: dict[str, str]) -> list[str]:
        """The sbatch flags for the given option values (defaults filled in).

        LaunchError when a given option has no rule for its value.
        """
        merged = {**self.defaults, **values}
        flags: list[str] = []
        for name in OPTION_NAMES:
            if name not in merged:
                continue
            value = merged[name]
            rules = self.rules.get(name, {})
            if value in rules:
                template = rules[value]
            elif "*" in rules:
                template = rules["*"]
            else:
                raise LaunchError(
                    f"{self.path} has no rule for --{name} {value} "
                    f"(add e.g. 'option {name}=* --flag=$0')"
                )
            flags += [word.replace("$0", value) for word in template]
        return flags


def _normal_name(name: str, path: Path, line: int) -> str:
    name = name.replace("_", "-")
    if name not in OPTION_NAMES:
        raise PunctInputError(
            f"unknown option '{name}' (known: {', '.join(OPTION_NAMES)})", path, line
        )
    return name


def _seconds(words: list[str], key: str, path: Path, line: int) -> float:
    try:
        (text,) = words
        value = float(text)
    except ValueError:
        raise PunctInputError(f"{key} expects one number of seconds", path, line) from None
    if value < 0:
        raise PunctInputError(f"{key} must not be negative", path, line)
    return value


def parse_slurm_config(text: str, path: Path) -> SlurmConfig:
    """Parse the text of a slurm.conf; PunctInputError names the file and line of a bad one."""
    command: tuple[str, ...] = ("sbatch",)
    srun: tuple[str, ...] = ("srun", "--kill-on-bad-exit=1")
    rules: dict[str, dict[str, tuple[str, ...]]] = {}
    defaults: dict[str, str] = {}
    poll_interval, log_wait = 5.0, 30.0
    for number, raw in enumerate(text.splitlines(), start=1):
        try:
            words = shlex.split(raw, comments=True)
        except ValueError as err:
            raise PunctInputError(f"cannot split the line: {err}", path, number) from None
        if not words:
            continue
        key, args = words[0], words[1:]
        if key in ("command", "srun"):
            if not args:
                raise PunctInputError(f"'{key}' needs a program name", path, number)
            if key == "command":
                command = tuple(args)
            else:
                srun = tuple(args)
        elif key in ("option", "default"):
            if not args or "=" not in args[0]:
                raise PunctInputError(f"expected '{key} NAME=VALUE ...'", path, number)
            name, _, value = args[0].partition("=")
            name = _normal_name(name, path, number)
            if not value:
                raise PunctInputError(f"empty value in '{args[0]}'", path, number)
            if key == "option":
                rules.setdefault(name, {})[value] = tuple(args[1:])
            elif len(args) > 1:
                raise PunctInputError("'default' takes only NAME=VALUE", path, number)
            else:
                defaults[name] = value
        elif key == "poll_interval":
            poll_interval = _seconds(args, key, path, number)
        elif key == "log_wait":
            log_wait = _seconds(args, key, path, number)
        else:
            raise PunctInputError(
                f"unknown directive '{key}' (expected command, option, default, srun, "
                "poll_interval or log_wait)", path, number,
            )
    return SlurmConfig(str(path), command, rules, defaults, srun, poll_interval, log_wait)


def read_slurm_config(path: Path) -> SlurmConfig:
    """Read and parse a slurm.conf file (MissingDataError when it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingDataError("no such Slurm configuration file", path) from None
    return parse_slurm_config(text, path)

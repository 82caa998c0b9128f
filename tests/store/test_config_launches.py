"""``[launches."<agent id>"]``: which roster agents run in a container when a round runs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from store import InvalidArgument
from store.config import DEFAULT_CONFIG_TOML, ReviewerKind, load_config


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_launches_are_none_by_default_and_init_shows_every_key_commented(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path, DEFAULT_CONFIG_TOML)).launches == {}
    keys = ("[launches", "kind", "command", "image", "timeout_seconds", "memory_limit", "cpus",
            "pids_limit", "nofile_limit")  # fmt: skip
    commented = [
        line.removeprefix("# ") for line in DEFAULT_CONFIG_TOML.splitlines() if line.startswith("# ")
    ]
    example = "\n".join(line for line in commented if line.startswith(keys))
    parsed = tomllib.loads(example.replace("{version}", "0.1.0"))
    section = parsed["launches"]["reviewer-1"]
    assert set(section) == {"kind", "command", "image", "timeout_seconds", "memory_limit", "cpus",
                            "pids_limit", "nofile_limit"}  # fmt: skip
    config = load_config(_config(tmp_path, DEFAULT_CONFIG_TOML + example.replace("{version}", "0.1.0")))
    launch = config.launches["reviewer-1"]
    assert launch.kind is ReviewerKind.TEST and launch.command == ["python", "-m", "pytest", "-q"]
    assert (launch.timeout_seconds, launch.memory_limit, launch.pids_limit) == (300, "512m", 128)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[launches."implementer-1"]\nkind = "mcp"', "voting role"),
        ('[launches."memory-oracle-1"]\nkind = "mcp"', "voting role"),
        ('[launches."nobody"]\nkind = "mcp"', "voting role"),
        ('[launches."reviewer-1"]\nkind = "test"', "needs a command"),
        ('[launches."reviewer-1"]\nkind = "shell"\ncommand = ["x"]', "kind"),
        ('[launches."reviewer-1"]\nkind = "mcp"\ncommand = ["ok", ""]', "command"),
        ('[launches."reviewer-1"]\nkind = "mcp"\nprivileged = true', "privileged"),
    ],
)
def test_bad_launch_sections_are_refused_when_loaded(tmp_path: Path, section: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        load_config(_config(tmp_path, DEFAULT_CONFIG_TOML + "\n" + section + "\n"))


def test_a_security_agent_may_be_launched(tmp_path: Path) -> None:
    text = DEFAULT_CONFIG_TOML + '\n[launches."security-1"]\nkind = "mcp"\nimage = "mine:1"\n'
    assert load_config(_config(tmp_path, text)).launches["security-1"].image == "mine:1"

"""Config: the example file is exactly the defaults; every problem names its key; exit code 2."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import Settings, load_settings, parse_settings
from carryd.daemon.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config.example.toml"


def example() -> dict[str, Any]:
    with EXAMPLE.open("rb") as handle:
        return tomllib.load(handle)


def setting_keys(value: Any, prefix: str = "") -> set[str]:
    """Given a settings dataclass, return every dotted key it has (a mapping is one key)."""
    keys: set[str] = set()
    for field in dataclasses.fields(value):
        if field.name in ("config_file", "model_keys_written"):  # provenance, not keys
            continue
        inner = getattr(value, field.name)
        if dataclasses.is_dataclass(inner):
            keys |= setting_keys(inner, f"{prefix}{field.name}.")
        else:
            keys.add(prefix + field.name)
    return keys


def toml_keys(data: dict[str, Any], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, inner in data.items():
        if isinstance(inner, dict) and name != "workspaces":
            keys |= toml_keys(inner, f"{prefix}{name}.")
        else:
            keys.add(prefix + name)
    return keys


def test_example_parses_to_exactly_the_defaults() -> None:
    assert parse_settings(example(), source=str(EXAMPLE)) == Settings()


def test_example_lists_every_key() -> None:
    assert toml_keys(example()) == setting_keys(Settings())


def test_load_settings_of_the_example_keeps_defaults_and_names_the_file(tmp_path: Path) -> None:
    settings = load_settings(EXAMPLE, root=tmp_path, environ={})
    assert dataclasses.replace(settings, root="", config_file="") == Settings()
    assert settings.config_file == str(EXAMPLE)
    assert settings.root == str(tmp_path)


@pytest.mark.parametrize(
    ("toml", "key", "words"),
    [
        ("bogus = 1", "bogus", "unknown key"),
        ("[daemon]\ndebounce = 300", "daemon.debounce", "unknown key"),
        ("[carry.sections]\nextra = ['x']", "carry.sections.extra", "unknown key"),
        ('[daemon]\ndebounce_ms = "300"', "daemon.debounce_ms", "expected an integer"),
        ("[daemon]\ndebounce_ms = 1.5", "daemon.debounce_ms", "expected an integer"),
        ("[daemon]\ndebounce_ms = -1", "daemon.debounce_ms", "must not be negative"),
        ("[daemon]\narchive_plan = 1", "daemon.archive_plan", "expected true or false"),
        ("[recall]\nmin_confidence = 'high'", "recall.min_confidence", "expected a number"),
        ("[index]\nignore_dirs = [1, 2]", "index.ignore_dirs", "a list of strings"),
        ("[index]\nignore_dirs = '.git'", "index.ignore_dirs", "a list of strings"),
        ("root = 5", "root", "expected a string"),
        ("daemon = 5", "daemon", "expected a table"),
        ("[workspaces]\n'~/src/x' = 1", "workspaces", "a table of strings"),
    ],
)
def test_bad_values_name_their_key(toml: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(tomllib.loads(toml), source="bad.toml")
    message = str(caught.value)
    assert f"'{key}'" in message
    assert words in message
    assert message.startswith("bad.toml: ")


def test_cli_exits_2_on_a_bad_config_and_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[daemon]\ndebounce_ms = 'soon'\n")
    root = tmp_path / "root"
    root.mkdir()
    code = main(["status", "--config", str(bad), "--root", str(root)])
    assert code == 2
    error = capsys.readouterr().err
    assert "daemon.debounce_ms" in error
    assert str(bad) in error


def test_cli_exits_2_on_a_bad_config_as_a_real_process(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("unknown_key = true\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "carryd.daemon.cli",
            "status",
            "--config",
            str(bad),
            "--root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown_key" in result.stderr


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[daemon\n", "not valid TOML"),
        (None, "config file not found"),
    ],
)
def test_unreadable_or_missing_explicit_config(
    tmp_path: Path, content: str | None, words: str
) -> None:
    path = tmp_path / "config.toml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=words):
        load_settings(path, environ={})


def test_missing_default_config_is_fine_but_a_missing_root_is_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings(environ={})  # HOME is a fresh tmp dir (conftest): no config file
    assert settings == Settings()
    with pytest.raises(ConfigError, match="no memory root"):
        _ = settings.root_path
    assert main(["status"]) == 2
    assert "no memory root" in capsys.readouterr().err


def test_root_precedence(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'root = "{tmp_path / "from-config"}"\n')
    env = {"CARRYD_ROOT": str(tmp_path / "from-env")}
    assert load_settings(config, environ={}).root == str(tmp_path / "from-config")
    assert load_settings(config, environ=env).root == str(tmp_path / "from-env")
    assert load_settings(config, root=tmp_path / "flag", environ=env).root == str(tmp_path / "flag")
    assert load_settings(environ={"CARRYD_CONFIG": str(config)}).config_file == str(config)


def test_root_is_found_by_walking_up_to_the_state_folder(tmp_path: Path) -> None:
    """Issue 10 item 6: `carryd expand` as a carry prints it, run from a folder inside the
    root, finds the root — after --root, CARRYD_ROOT and the config, which still win."""
    root = tmp_path / "memory"
    deep = root / "ws" / "notes" / "deeper"
    deep.mkdir(parents=True)
    (root / ".carryd").mkdir()
    assert load_settings(environ={}, cwd=deep).root == str(root)
    assert load_settings(environ={}, cwd=root).root == str(root)
    assert load_settings(environ={"CARRYD_ROOT": "/elsewhere"}, cwd=deep).root == "/elsewhere"
    config = tmp_path / "c.toml"
    config.write_text(f'root = "{tmp_path / "from-config"}"\n')
    assert load_settings(config, environ={}, cwd=deep).root == str(tmp_path / "from-config")
    assert load_settings(environ={}, cwd=tmp_path).root == ""  # no .carryd/ above: no root
    (tmp_path / "plain" / ".carryd").mkdir(parents=True)
    (tmp_path / "plain" / "x").mkdir()
    (tmp_path / "plain" / "x" / ".carryd").write_text("a file, not the state folder")
    assert load_settings(environ={}, cwd=tmp_path / "plain" / "x").root == str(tmp_path / "plain")


def test_model_path_precedence(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[model]\nmodel_path = "/models/from-config"\n')
    env = {"CARRYD_MODEL_PATH": "/models/from-env"}
    assert load_settings(config, environ=env).model.model_path == "/models/from-config"
    assert load_settings(environ=env).model.model_path == "/models/from-env"


@pytest.mark.parametrize(
    ("directory", "expected"),
    [
        ("~/src/carryd", "carryd-ws"),
        ("~/src/carryd/daemon/deep", "carryd-ws"),
        ("~/src/carryd/vendor/lib", "vendored"),  # the longest configured match wins
        ("~/src/carryd-other", "carryd-other"),  # a name prefix is not a parent folder
        ("/elsewhere/project-x", "project-x"),  # no mapping: the folder's own name
    ],
)
def test_workspace_mapping(directory: str, expected: str) -> None:
    settings = parse_settings(
        tomllib.loads(
            '[workspaces]\n"~/src/carryd" = "carryd-ws"\n"~/src/carryd/vendor" = "vendored"\n'
        )
    )
    assert settings.workspace_for(directory) == expected
    assert settings.workspace_for(Path(directory).expanduser()) == expected


def test_an_unknown_home_in_a_hosts_directory_is_taken_as_written() -> None:
    """A host's working directory is input: "~user" of no such user names a folder like any
    other (pathlib's expanduser raised, and a SessionStart hook with that cwd had no answer)."""
    settings = parse_settings(tomllib.loads('[workspaces]\n"/a" = "b"\n'))
    assert settings.workspace_for("~carryd-no-such-user/proj") == "proj"


def test_settings_are_frozen() -> None:
    settings = parse_settings(tomllib.loads('[workspaces]\n"/a" = "b"\n'))
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.root = "/x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.workspaces["x"] = "y"  # type: ignore[index]


def test_every_problem_in_the_file_is_reported_at_once(tmp_path: Path) -> None:
    """Like borgmatic: one run names every wrong key, each with its path and reason, so a user
    fixes the file in one go instead of one error per try."""
    config = tmp_path / "bad.toml"
    config.write_text(
        "bogus = 1\n"
        "[daemon]\ndebounce_ms = -1\narchive_plan = 1\n"
        "[recall]\nmin_confidence = 'high'\n"
        "[carry.sections]\nextra = ['x']\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(config, root=tmp_path, environ={})
    message = str(caught.value)
    assert message.startswith(f"{config}: 5 problems:\n")
    for key, words in [
        ("bogus", "unknown key"),
        ("daemon.debounce_ms", "must not be negative"),
        ("daemon.archive_plan", "expected true or false"),
        ("recall.min_confidence", "expected a number"),
        ("carry.sections.extra", "unknown key"),
    ]:
        assert any(f"'{key}'" in line and words in line for line in message.splitlines()), key


def test_a_single_problem_reads_as_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[daemon]\ndebounce_ms = 'soon'\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config, root=tmp_path, environ={})
    assert str(caught.value) == (
        f"{config}: at 'daemon.debounce_ms': expected an integer, got str 'soon'"
    )


def test_the_model_keys_the_file_names_are_recorded_when_it_is_parsed(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[model]\nname = "Xenova/multilingual-e5-small"\n', encoding="utf-8")
    assert load_settings(config, root=tmp_path, environ={}).model_keys_written == {"name"}
    assert load_settings(None, root=tmp_path, environ={}).model_keys_written == frozenset()


def test_a_reload_keeps_the_model_keys_the_running_model_was_built_with(tmp_path: Path) -> None:
    """Which [model] keys the file names is part of the model identity: like the model
    itself it changes only with a restart (SIGHUP keeps it and says so)."""
    from carryd.daemon.running.run import merge_reload

    written = tmp_path / "written.toml"
    written.write_text('[model]\nname = "Xenova/multilingual-e5-small"\n', encoding="utf-8")
    plain = tmp_path / "plain.toml"
    plain.write_text("[daemon]\ndebounce_ms = 500\n", encoding="utf-8")
    old = load_settings(written, root=tmp_path, environ={})
    new = load_settings(plain, root=tmp_path, environ={})
    effective, applied, kept = merge_reload(old, new)
    assert kept == ["model_keys_written"]
    assert "daemon.debounce_ms" in applied
    assert effective.model_keys_written == {"name"}
    assert effective.daemon.debounce_ms == 500


# --- paths from config never leave the root (issue 11) ---------------------------------------


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[index]\nstate_dir = "../../x"', "index.state_dir"),
        ('[index]\nstate_dir = "/tmp/state"', "index.state_dir"),
        ('[index]\nstate_dir = "a/b"', "index.state_dir"),
        ('[index]\nstate_dir = ".."', "index.state_dir"),
        ('[index]\nstate_dir = ""', "index.state_dir"),
        ('[workspaces]\n"~/src/shop" = "../etc"', 'workspaces."~/src/shop"'),
        ('[workspaces]\n"~/src/shop" = "/etc"', 'workspaces."~/src/shop"'),
        ('[workspaces]\n"~/src/shop" = "a/b"', 'workspaces."~/src/shop"'),
        ('[carry]\nplan_file = "../../etc/passwd"', "carry.plan_file"),
        ('[carry]\nledger_file = "/etc/passwd"', "carry.ledger_file"),
        ('[carry]\narchive_dir = "handoff/../../.."', "carry.archive_dir"),
    ],
)
def test_a_path_that_would_leave_the_root_is_rejected_naming_its_key(toml: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(tomllib.loads(toml), source="bad.toml")
    assert f"'{key}'" in str(caught.value)


def test_the_cli_exits_2_on_a_state_dir_outside_the_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[index]\nstate_dir = "../../x"\n')
    root = tmp_path / "a" / "b" / "root"
    root.mkdir(parents=True)
    for command in (["index"], ["status"], ["carry"]):
        assert main([*command, "--config", str(bad), "--root", str(root)]) == 2
        assert "index.state_dir" in capsys.readouterr().err
    assert not (tmp_path / "a" / "x").exists()


def test_ordinary_names_and_nested_carry_paths_are_fine() -> None:
    settings = parse_settings(
        tomllib.loads(
            '[index]\nstate_dir = ".state"\n[workspaces]\n"~/src/shop" = "webshop"\n'
            '[carry]\nledger_file = "handoff/LEDGER.md"\n'
        )
    )
    assert settings.index.state_dir == ".state"
    assert dict(settings.workspaces) == {"~/src/shop": "webshop"}

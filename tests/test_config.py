from pathlib import Path

import pytest

from gate import config
from gate.engine import store


def test_project_key_is_claude_codes():
    assert config.project_key(Path("/home/me/my.app")) == "-home-me-my-app"
    assert config.project_key(Path("/work/a_b c")) == "-work-a-b-c"


def test_defaults(tmp_path):
    settings = config.load({}, cwd=tmp_path)
    assert settings.home == str(Path.home() / ".claude")
    assert settings.project_dir == str(tmp_path)
    assert settings.embed_url is None and settings.embed_model == "bge-m3"
    assert settings.max_distance is None and settings.session_id is None


def test_environment(tmp_path):
    settings = config.load(
        {
            "MEMORY_GATE_HOME": str(tmp_path / "h"),
            "CLAUDE_PROJECT_DIR": str(tmp_path / "p"),
            "CLAUDE_CODE_SESSION_ID": "abc",
            "MEMORY_GATE_EMBED_URL": "http://127.0.0.1:1/v1/embeddings",
            "MEMORY_GATE_MAX_DISTANCE": "0.15",
        },
        cwd=tmp_path,
    )
    assert settings.home == str(tmp_path / "h") and settings.project_dir == str(tmp_path / "p")
    assert settings.session_id == "abc" and settings.max_distance == 0.15
    assert settings.embed_url == "http://127.0.0.1:1/v1/embeddings"


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "3", "nan"])
def test_bad_distance_names_the_variable(raw):
    with pytest.raises(config.ConfigError, match="MEMORY_GATE_MAX_DISTANCE"):
        config.load({"MEMORY_GATE_MAX_DISTANCE": raw})


@pytest.mark.parametrize("raw", ["sqlite:///tmp/m.db", "mysql://alice:s3cret@db.example/team", "file://x"])
def test_a_database_url_memory_gate_cannot_use_is_refused_without_echoing_it(raw, tmp_path):
    # Taken for a relative path, it would put a new, empty memory in ./sqlite:/...
    with pytest.raises(config.ConfigError, match="MEMORY_GATE_DB is a URL") as raised:
        config.load({"MEMORY_GATE_DB": raw}, cwd=tmp_path)
    assert "s3cret" not in str(raised.value) and "alice" not in str(raised.value)
    assert "postgresql://USER@HOST" in str(raised.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("raw", ["postgresql://alice:s3cret@db.example/team", "postgres://db/x", "POSTGRESQL://db/x"])
def test_a_postgresql_url_is_the_teams_memory_and_the_ledger_stays_local(raw, tmp_path):
    settings = config.load({"MEMORY_GATE_DB": raw, "MEMORY_GATE_HOME": str(tmp_path)}, cwd=tmp_path)
    assert settings.team_url == raw and settings.database is None
    # The turn ledger: the project's own local file, as without a team.
    assert config.find_database(settings) == config.database_for(str(tmp_path), str(tmp_path))
    assert "s3cret" not in repr(settings)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("raw", ["x" * 201, "a\nb"])
def test_a_project_name_no_team_can_share_is_refused(raw):
    with pytest.raises(config.ConfigError, match="MEMORY_GATE_PROJECT"):
        config.load({"MEMORY_GATE_PROJECT": raw})


@pytest.mark.parametrize("raw", ["memory.db", "./data/m.db", "/abs/m:1.db", "odd: a path//x.db"])
def test_a_database_path_is_taken_as_given(raw):
    import os

    assert config.load({"MEMORY_GATE_DB": raw}).database == os.path.abspath(raw)


def test_new_project_database_goes_to_the_project_root(tmp_path):
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    settings = config.load({"MEMORY_GATE_HOME": str(tmp_path / "h"), "CLAUDE_PROJECT_DIR": str(root)}, cwd=root / "sub")
    assert config.find_database(settings) == str(tmp_path / "h" / "projects" / config.project_key(root) / "memory" / "memory.db")


def test_a_subfolder_uses_the_nearest_database_above(tmp_path):
    home, root = tmp_path / "h", tmp_path / "repo"
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    above = config.database_for(home, root)
    store.connect(above).close()
    settings = config.load({"MEMORY_GATE_HOME": str(home)}, cwd=deep)
    assert config.find_database(settings) == above


def test_explicit_database_wins(tmp_path):
    settings = config.load({"MEMORY_GATE_DB": str(tmp_path / "x.db")}, cwd=tmp_path)
    assert config.find_database(settings) == str(tmp_path / "x.db")


@pytest.mark.parametrize(
    "raw, url",
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/embeddings"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/embeddings"),
        ("https://embed.example/api/embed", "https://embed.example/api/embed"),
        ("http://[::1]:11434/", "http://[::1]:11434/v1/embeddings"),
        ("  ", None),
    ],
)
def test_embeddings_url_gets_the_openai_path_when_bare(raw, url):
    assert config.load({"MEMORY_GATE_EMBED_URL": raw}).embed_url == url


@pytest.mark.parametrize("raw", ["localhost:8080", "ftp://host/v1", "http://", "http://host:port/"])
def test_a_bad_embeddings_url_names_the_variable(raw):
    with pytest.raises(config.ConfigError, match="MEMORY_GATE_EMBED_URL"):
        config.load({"MEMORY_GATE_EMBED_URL": raw})


def test_home_follows_claude_config_dir(tmp_path):
    settings = config.load({"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}, cwd=tmp_path)
    assert settings.home == str(tmp_path / "cc")
    assert config.load({"CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "MEMORY_GATE_HOME": str(tmp_path / "m")},
                       cwd=tmp_path).home == str(tmp_path / "m")

"""Which team's memory a project uses (gate/memory/team.py): its name from the git remote, the
setting `team connect` writes, and the URLs it refuses. No database needed."""

from __future__ import annotations

import pytest

from gate import config
from gate.memory import team


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("git@github.com:acme/api.git", "github.com/acme/api"),
        ("https://github.com/acme/api.git", "github.com/acme/api"),
        ("https://ghp_token@GitHub.com/acme/api/", "github.com/acme/api"),
        ("https://ana:s3cret@gitlab.example:8443/group/sub/api.git", "gitlab.example/group/sub/api"),
        ("ssh://git@github.com:22/acme/api", "github.com/acme/api"),
        ("github.com:acme/api", "github.com/acme/api"),
        ("/srv/git/api.git", "srv/git/api"),
    ],
)
def test_a_project_is_named_by_its_remote_alike_on_every_clone_and_never_with_a_credential(url, name):
    assert team.name_of(url) == name


def git_config(folder, body: str):
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "config").write_text(body)
    return folder


def test_the_remote_is_read_from_the_git_config_of_the_folder_or_a_folder_above(tmp_path):
    root = git_config(tmp_path / "repo", '[remote "upstream"]\n\turl = git@x.org:o/up.git\n'
                      '[remote "origin"]\n\turl = git@github.com:acme/api.git\n')
    (root / "src" / "deep").mkdir(parents=True)
    assert team.remote_name(str(root / "src" / "deep")) == "github.com/acme/api"
    assert team.remote_name(str(tmp_path)) is None


def test_a_worktree_reads_its_main_repository_config(tmp_path):
    main = git_config(tmp_path / "main", '[remote "origin"]\n\turl = https://github.com/acme/api\n')
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    tree = tmp_path / "wt"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    assert team.remote_name(str(tree)) == "github.com/acme/api"


@pytest.mark.parametrize(
    "url",
    ["postgresql://ana:s3cret@db/team", "postgresql://ana@db/team?password=s3cret", "postgres://:s3cret@db/x"],
)
def test_a_url_with_a_password_is_refused_without_echoing_it(url):
    with pytest.raises(config.ConfigError, match="never stores one") as refused:
        team.check_url(url)
    assert "s3cret" not in str(refused.value) and "~/.pgpass" in str(refused.value)


@pytest.mark.parametrize("url", ["mysql://db/x", "db.example:5432", "postgresql://db:port/x"])
def test_a_url_that_is_not_postgresqls_is_refused_with_its_shape(url):
    with pytest.raises(config.ConfigError, match="postgresql://USER@HOST:PORT/DATABASE"):
        team.check_url(url)


def test_the_setting_is_read_beside_the_local_database_and_a_broken_one_names_the_mend(tmp_path):
    settings = config.load({"MEMORY_GATE_HOME": str(tmp_path / "home")}, cwd=tmp_path)
    assert team.find(settings) is None
    path = team.setting_path(config.find_database(settings))
    import os

    os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write('{"url": "postgresql://ana@db/team", "project": "acme-api"}')
    assert team.find(settings) == team.Team("postgresql://ana@db/team", "acme-api", path)
    # MEMORY_GATE_PROJECT names the project whatever the setting says.
    named = config.load({"MEMORY_GATE_HOME": str(tmp_path / "home"), "MEMORY_GATE_PROJECT": "other"}, cwd=tmp_path)
    assert team.find(named).project == "other"
    with open(path, "w") as handle:
        handle.write('{"url": 7}')
    with pytest.raises(config.ConfigError, match="team connect URL` again, or `memory-gate team disconnect"):
        team.find(settings)


def test_memory_gate_db_names_the_team_and_wins_over_the_setting(tmp_path):
    git_config(tmp_path / "repo", '[remote "origin"]\n\turl = git@github.com:acme/api.git\n')
    settings = config.load({"MEMORY_GATE_HOME": str(tmp_path / "h"), "MEMORY_GATE_DB": "postgresql://db/team"},
                           cwd=tmp_path / "repo")
    assert team.find(settings) == team.Team("postgresql://db/team", "github.com/acme/api", "MEMORY_GATE_DB")


@pytest.mark.parametrize("url", ["git@github.com:Acme/API.git", "https://github.com/acme/api", "https://GitHub.com/ACME/Api/"])
def test_clones_named_in_either_case_are_one_project(url):
    assert team.name_of(url) == "github.com/acme/api"


def test_memory_gate_db_with_a_password_is_refused_as_team_connect_refuses_it(tmp_path):
    settings = config.load({"MEMORY_GATE_DB": "postgresql://ana:s3cret@db.internal/team", "MEMORY_GATE_PROJECT": "acme-api",
                            "MEMORY_GATE_HOME": str(tmp_path)}, cwd=tmp_path)
    with pytest.raises(config.ConfigError) as refused:
        team.find(settings)
    message = str(refused.value)
    assert "MEMORY_GATE_DB" in message and "~/.pgpass" in message and "PGPASSWORD" in message
    assert "s3cret" not in message

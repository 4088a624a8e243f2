"""The embedded PostgreSQL from Debian's programs: how `make run` and `make test` get a
database, on every supported Python version."""

import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from portal import devstack

DEBIAN_POSTGRES = devstack._debian_postgres()


@pytest.fixture
def data_dir(monkeypatch):
    # Not under pytest's own temporary folder: that is private to root, and the server
    # runs as the postgres user when the suite runs as root.
    path = Path(tempfile.mkdtemp(prefix="steward-pg-"))
    path.chmod(0o755)
    monkeypatch.setattr(devstack, "DATA", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().split()[0])


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_debian_programs_start_a_cluster_that_answers_as_the_app_role_and_stop_it(
    monkeypatch, data_dir
):
    if DEBIAN_POSTGRES is None:
        # `make test` as root installs it (devstack.postgres_programs); say what is missing.
        pytest.fail("this test needs Debian's postgresql package (apt-get install postgresql)")
    monkeypatch.setenv("STEWARD_POSTGRES_BIN", str(DEBIAN_POSTGRES))

    app_url, server = devstack.start_postgres()
    pgdata = server.pgdata
    assert pgdata.parent == data_dir and (pgdata / "PG_VERSION").exists()
    postmaster = _postmaster_pid(pgdata)
    try:
        with psycopg.connect(app_url) as conn:
            user, superuser, bypass, version = conn.execute(
                "SELECT current_user, rolsuper, rolbypassrls, current_setting('server_version')"
                " FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
        assert (user, superuser, bypass) == ("steward", False, False)
        assert version.split(".")[0] == DEBIAN_POSTGRES.parent.name
        # A Unix socket only: nothing listens on TCP.
        with psycopg.connect(server.admin_url) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
    finally:
        server.cleanup()

    assert not _running(postmaster)
    assert not (pgdata / "postmaster.pid").exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(app_url, connect_timeout=2)


def test_a_second_stack_reuses_a_running_cluster_and_leaves_it_to_the_first(monkeypatch, data_dir):
    if DEBIAN_POSTGRES is None:
        pytest.fail("this test needs Debian's postgresql package (apt-get install postgresql)")
    monkeypatch.setenv("STEWARD_POSTGRES_BIN", str(DEBIAN_POSTGRES))
    first_url, first = devstack.start_postgres()
    try:
        second_url, second = devstack.start_postgres()
        assert second_url == first_url
        second.cleanup()
        with psycopg.connect(first_url) as conn:  # still up for the first stack
            assert conn.execute("SELECT 1").fetchone() == (1,)
        postmaster = _postmaster_pid(first.pgdata)
    finally:
        first.cleanup()
    assert not _running(postmaster)


def test_a_postgres_bin_without_the_programs_stops_with_one_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("STEWARD_POSTGRES_BIN", str(tmp_path))
    with pytest.raises(devstack.StackError) as refused:
        devstack.postgres_programs()
    message = str(refused.value)
    assert "\n" not in message
    assert "STEWARD_POSTGRES_BIN" in message and "initdb and pg_ctl" in message


@pytest.mark.parametrize("version", [(3, 10), (3, 14)])
def test_an_unsupported_python_stops_with_one_sentence_naming_the_versions(version):
    with pytest.raises(devstack.StackError) as refused:
        devstack.check_python(version)
    message = str(refused.value)
    assert "\n" not in message
    assert "Python 3.11 to 3.13" in message and f"{version[0]}.{version[1]}" in message


@pytest.mark.parametrize("version", [(3, 11), (3, 12), (3, 13)])
def test_the_supported_pythons_pass(version):
    devstack.check_python(version)


def test_the_makefile_checks_the_same_versions_as_devstack():
    makefile = (Path(devstack.ROOT) / "Makefile").read_text()
    low, high = devstack.PYTHON_VERSIONS
    assert f"{low} <= v <= {high}" in makefile

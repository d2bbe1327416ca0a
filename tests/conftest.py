"""Shared fixtures: a work directory per test session, the CLI as a subprocess, and
temporary git repositories holding a copy of the minikernel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MINI_SRC = ROOT / "kernels" / "minikernel" / "src"
MINI_TOML = ROOT / "kernels" / "minikernel" / "kernel.toml"


def script(relpath: str):
    """A script of this repository (``bench/simulate.py``, ``kernels/minikernel/make_history.py``)
    loaded as a module, once: the tests call its functions as they are.  A script under bench/ is
    imported as a module of the bench package (``bench.simulate``, as ``python3 -m bench.simulate``
    runs it); another is loaded from its file under its path's name (``kernels.minikernel.make_history``),
    which no module of the package shares."""
    import importlib

    path = Path(relpath)
    name = ".".join(path.with_suffix("").parts)
    if path.parts[0] == "bench":
        return importlib.import_module(name)
    if name not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location(name, ROOT / path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[name]


def lb(*args: str, env: dict | None = None, check: bool = True, timeout: float = 900,
       cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the ``layoutbench`` command as a user would; return the finished process."""
    e = {**os.environ, **(env or {})}
    p = subprocess.run([sys.executable, "-m", "layoutbench.cli", *args], capture_output=True, text=True,
                       env=e, timeout=timeout, cwd=cwd)
    if check and p.returncode != 0:
        raise AssertionError(f"layoutbench {' '.join(args)} exited {p.returncode}\nstdout:\n{p.stdout}\n"
                             f"stderr:\n{p.stderr}")
    return p


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout.strip()


def mini_repo(path: Path) -> Path:
    """A new git repository with the minikernel tree at its top, one commit."""
    shutil.copytree(MINI_SRC, path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "minikernel")
    return path


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """One layoutbench work directory for the session (objects are compiled once in it).

    ``LAYOUTBENCH_TEST_WORKDIR`` names one to keep between sessions (a developer's Linux
    build then takes seconds, not minutes); by default every session starts empty."""
    keep = os.environ.get("LAYOUTBENCH_TEST_WORKDIR")
    d = Path(keep).resolve() if keep else tmp_path_factory.mktemp("lbwork")
    d.mkdir(parents=True, exist_ok=True)
    os.environ["LAYOUTBENCH_DIR"] = str(d)
    return d


@pytest.fixture
def fresh_workdir(tmp_path, monkeypatch) -> Path:
    """A work directory of the test's own (nothing cached)."""
    d = tmp_path / "work"
    monkeypatch.setenv("LAYOUTBENCH_DIR", str(d))
    return d


# -- what setup.sh installs ----------------------------------------------------------------------------

def require(missing: str | None) -> None:
    """A tool or package the tests use and setup.sh installs: missing, the test fails and says what to
    run (a skip would leave the feature untested under a green suite)."""
    if missing:
        pytest.fail(f"{missing}: run `bash setup.sh`, which installs it", pytrace=False)


def require_module(name: str) -> None:
    """:func:`require` for a Python package of the test extra (at a module's top: its tests fail)."""
    import importlib.util

    require(None if importlib.util.find_spec(name) else f"the Python package {name} is not installed")


# -- in CI nothing may hide behind a skip ----------------------------------------------------------
# setup.sh installs every tool the tests use; a skip in CI means it did not, and that is a failure.

def _fail_skip_in_ci(report) -> None:
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where setup.sh installs everything the tests need: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip_in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skip_in_ci(outcome.get_result())


# -- the longest modules first ----------------------------------------------------------------------
#: The modules that take longest (tens of minutes together: a Linux build and boots, bisections of
#: minikernel histories), longest first.  The README's test command runs two workers (``-n 2``,
#: pytest-xdist), which take whole modules (a module's tests and its module fixtures stay on one
#: worker) in this order: started first, the long ones do not leave one worker running alone at the end.
LONGEST_FIRST = ("test_linux.py", "test_bisect.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the other modules, and the tests within each, keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``-n N``: whole modules to a worker, in the collection's order (xdist's own order would put
    the modules with the most tests first)."""
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False
    return LoadFileScheduling(config, log)


# -- the native symdiff helper ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def native_helper() -> str:
    """The native symdiff helper, built as setup.sh builds it (``cargo build --release --offline``)
    when it is missing or older than its sources, so that its tests run on what the tree says."""
    from layoutbench import native

    if native.binary() is None:
        if not shutil.which("cargo"):
            require("cargo is not installed, so the native symdiff helper cannot be built")
        r = subprocess.run(["cargo", "build", "--release", "--quiet", "--offline", "--manifest-path",
                            os.path.join(native.CRATE, "Cargo.toml")], capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0 and native.binary() is not None, r.stderr[-3000:]
    return native.binary()

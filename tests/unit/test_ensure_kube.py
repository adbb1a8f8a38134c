"""``ensure-kube.sh`` on a new machine: the test suite's workers call it at once, and only one
of them may run the package manager (a second ``apt-get`` meets its lock and exits 100, which
failed every Kubernetes test of a first run)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "src/devcluster/scripts/ensure-kube.sh"
TOOLS = ("bash", "dirname", "mkdir", "flock", "sleep", "chmod", "grep", "rm", "mv", "mktemp")
# apt-get as the real one behaves under contention: a second caller fails on the lock
FAKE_APT = """#!/bin/bash
exec 8>"$FAKE_APT_LOCK"
flock -n 8 || { echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100; }
echo "$*" >> "$FAKE_APT_LOG"
sleep 0.3
if [[ " $* " == *" install "* ]]; then
  for p in etcd openssl curl; do
    printf '#!/bin/bash\\n' > "$FAKE_BIN/$p"; chmod +x "$FAKE_BIN/$p"
  done
fi
"""


def machine(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A machine of the tools the script needs, with apt-get faked, and a cache holding the
    built binaries: (its bin folder, the built folder, the environment)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "id").write_text("#!/bin/bash\necho 0\n")  # as root: no sudo
    (bin_dir / "apt-get").write_text(FAKE_APT)
    for name in ("id", "apt-get"):
        (bin_dir / name).chmod(0o755)
    cache = tmp_path / "cache"
    built = cache / "deb12u1-recipe1"
    built.mkdir(parents=True)
    (built / "kube-apiserver").write_text("#!/bin/bash\necho 'Kubernetes v1.20.2'\n")
    (built / "kube-apiserver").chmod(0o755)
    log = tmp_path / "apt.log"
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "CS_KUBE_CACHE": str(cache),
           "FAKE_APT_LOCK": str(tmp_path / "apt.lock"), "FAKE_APT_LOG": str(log),
           "FAKE_BIN": str(bin_dir)}
    return bin_dir, built, env


def run_all(bin_dir: Path, env: dict[str, str], n: int) -> list[tuple[str, str, int]]:
    runs = [subprocess.Popen([str(bin_dir / "bash"), str(SCRIPT)], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(n)]
    return [(*run.communicate(timeout=60), run.returncode) for run in runs]


def test_parallel_callers_install_the_packages_once_and_all_succeed(tmp_path: Path) -> None:
    bin_dir, built, env = machine(tmp_path)
    assert not (bin_dir / "etcd").exists()  # a new machine: etcd, openssl and curl are missing
    for out, err, code in run_all(bin_dir, env, 4):
        assert code == 0, err
        assert out.strip() == str(built)
    installs = [line for line in Path(env["FAKE_APT_LOG"]).read_text().splitlines()
                if " install " in f" {line} "]
    assert len(installs) == 1 and "etcd-server" in installs[0]
    assert os.access(bin_dir / "etcd", os.X_OK)


def test_a_ready_machine_takes_no_lock_and_installs_nothing(tmp_path: Path) -> None:
    # with everything in place the script only prints the folder: a cache it may not write to
    # (binaries provided read-only) still works
    bin_dir, built, env = machine(tmp_path)
    for tool in ("etcd", "openssl", "curl"):
        (bin_dir / tool).write_text("#!/bin/bash\n")
        (bin_dir / tool).chmod(0o755)
    [(out, err, code)] = run_all(bin_dir, env, 1)
    assert code == 0, err
    assert out.strip() == str(built)
    assert not Path(env["FAKE_APT_LOG"]).exists()
    assert not (built.parent / ".lock").exists()

"""The README's test command sets up its system programs, or names what is missing in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "system-packages.sh"
NEEDED = [
    *["qemu-aarch64", "file", "nvim", "ip", "slurmctld", "slurmd", "sinfo", "tmux", "npm"],
    *["chromium", "make", "g++", "pkg-config"],  # code-server's native modules, its browser
]
# headers, checked by their paths (a file, not a program on PATH)
HEADERS = {
    "/usr/include/krb5.h": "libkrb5-dev",
    "/usr/include/X11/Xlib.h": "libx11-dev",
    "/usr/include/X11/extensions/XKBfile.h": "libxkbfile-dev",
    "/usr/include/libsecret-1/libsecret/secret.h": "libsecret-1-dev",
}
SHELL_TOOLS = ["bash", "id", "mktemp", "cat", "rm"]


def _bin_with(tmp_path: Path, programs: list[str]) -> Path:
    """A PATH folder holding links to the real programs named, and nothing else."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in programs:
        real = shutil.which(name)
        assert real is not None, f"{name} is not installed here"
        (folder / name).symlink_to(real)
    return folder


def _run(path: Path) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run(
        [bash, str(SCRIPT)],
        env={"PATH": str(path), "HOME": os.environ.get("HOME", "/root")},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_machine_without_the_packages_and_without_apt_is_told_in_one_line(
    tmp_path: Path,
) -> None:
    done = _run(_bin_with(tmp_path, SHELL_TOOLS))
    assert done.returncode == 3
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    for package in ["qemu-user", "file", "neovim", "iproute2", "slurmctld", "slurmd"]:
        assert package in line
    for package in ["slurm-client", "tmux", "npm", "chromium", "build-essential", "pkg-config"]:
        assert package in line
    # build-essential brings both make and g++: named once
    assert line.count("build-essential") == 2, line  # in the list, and in the install command
    assert "apt-get install -y --no-install-recommends qemu-user" in line


def test_a_machine_with_every_program_goes_on_silently(tmp_path: Path) -> None:
    done = _run(_bin_with(tmp_path, SHELL_TOOLS + NEEDED))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/test.sh" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [
        line
        for line in ci.splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))
    ]
    assert commands == ["bash scripts/test.sh"]
    assert "system-packages.sh" in (ROOT / "scripts" / "test.sh").read_text()


def test_headers_are_checked_by_their_files(tmp_path: Path) -> None:
    """A header is a file the package brings (no program to find on PATH): the script checks its
    path, and names the package when the file is missing."""
    script = SCRIPT.read_text()
    for header, package in HEADERS.items():
        assert f'"{header} {package}"' in script
    missing = tmp_path / "include" / "nothing.h"
    copy = tmp_path / "system-packages.sh"
    copy.write_text(script.replace("/usr/include/krb5.h", str(missing)))
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, str(copy)],
        env={"PATH": str(_bin_with(tmp_path, SHELL_TOOLS + NEEDED)), "HOME": "/root"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # PATH holds no apt-get: the one line, naming the package of the missing header
    lines = done.stderr.splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr
    assert "libkrb5-dev" in lines[0]
    assert "apt-get install -y --no-install-recommends" in lines[0]

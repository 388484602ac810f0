"""A stand-in for vLLM's CUDA platform, for the tests that run vLLM's start-up defaults
(``EngineArgs.get_batch_defaults``) on a CPU-only machine: the CUDA platform does not
import here, so the defaults read a GPU's name and memory through this object."""

from __future__ import annotations


class FakeGpu:
    """What vLLM's platform reports about a GPU: its total memory, its name and its compute
    capability (which later releases' tiers read: a GB10 is 12.1)."""

    def __init__(self, memory: int, name: str, capability: tuple[int, int] = (9, 0)) -> None:
        self.memory, self.name, self.capability = memory, name, tuple(capability)

    def is_device_capability(self, capability: tuple[int, int] | int) -> bool:
        """vLLM's exact match on (major, minor)."""
        return tuple(capability) == self.capability if isinstance(capability, tuple) else False

    def get_device_total_memory(self) -> int:
        return self.memory

    def get_device_name(self) -> str:
        return self.name

    def is_tpu(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False

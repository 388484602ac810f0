"""A stand-in for vLLM's CUDA platform, for the tests that run vLLM's start-up defaults
(``EngineArgs.get_batch_defaults``) on a CPU-only machine: the CUDA platform does not
import here, so the defaults read a GPU's name and memory through this object."""

from __future__ import annotations


class FakeGpu:
    """What vLLM's platform reports about a GPU: its total memory and its name."""

    def __init__(self, memory: int, name: str) -> None:
        self.memory, self.name = memory, name

    def get_device_total_memory(self) -> int:
        return self.memory

    def get_device_name(self) -> str:
        return self.name

    def is_tpu(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False

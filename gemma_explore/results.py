"""Every result type a lesson meets, in one place: what the functions in ``ge`` return.

Each is a small frozen dataclass made by one function and read by the figures, the demo
and the command line. They are defined beside the function that makes them (a plan in
``plans/``, a layout in ``processing/``, …); this module gathers them so a learner, or a
type hint, has one place to look.

>>> from gemma_explore.results import ImagePlan
>>> ImagePlan.__module__
'gemma_explore.plans.image'
"""

from gemma_explore.bill.core import BillRow
from gemma_explore.bill.totals import Bill
from gemma_explore.conformance.probe import ProbeCase, ProbeResult
from gemma_explore.course.grader import Verdict
from gemma_explore.facts.families import FamilySpec
from gemma_explore.inside.attention import AttentionMasks
from gemma_explore.inside.towers import EncoderReport, ItemReport, PooledTokens
from gemma_explore.models.bundle import Generation
from gemma_explore.parity.checks import ParityReport, ParityRow
from gemma_explore.parity.comparison import FamilyComparison
from gemma_explore.plans.audio import AudioPlan
from gemma_explore.plans.image import ImagePlan
from gemma_explore.plans.video import VideoPlan
from gemma_explore.processing.features import AudioFeatures
from gemma_explore.processing.inputs import PreparedInputs
from gemma_explore.processing.layout import NewlineMerge, Placeholder, PromptLayout, Segment
from gemma_explore.processing.transcription import Transcription
from gemma_explore.serving.flops import FlopsReport
from gemma_explore.serving.plan import ServingPlan

# In the order the lessons meet them.
# fmt: off
__all__ = [
    "FamilySpec", "ImagePlan", "AudioPlan", "VideoPlan", "AudioFeatures",
    "PreparedInputs", "PromptLayout", "Segment", "Placeholder", "NewlineMerge",
    "Transcription", "ParityReport", "ParityRow", "FamilyComparison",
    "PooledTokens", "EncoderReport", "ItemReport", "AttentionMasks",
    "ServingPlan", "FlopsReport", "Bill", "BillRow", "ProbeResult", "ProbeCase", "Generation",
    "Verdict",
]
# fmt: on

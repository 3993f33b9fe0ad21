"""`iotame tune`: search a configuration space with real runs of the job under the runtime (optuna samplers,
RDB storage that resumes), re-run the best beside the default, and keep what was learnt in a knowledge base."""
from .builtin import FILE_SYSTEMS, builtin_space, tune_values
from .job import TEMPLATES, Job, nprocs_from_command, resolve_job, study_name
from .fsdetect import detect_fs
from .knowledge import ENV_KNOWLEDGE, KnowledgeBase, default_knowledge_path
from .layers import LAYERS
from .measure import OBJECTIVE_DIRECTIONS, OBJECTIVE_UNITS, Measurement, measure
from .samplers import DEFAULT_SAMPLER, SAMPLERS, Sampler, get_sampler
from .space import UNSET, Param, Space
from .spacefile import SpaceError, load_space, parse_space
from .records import TrialRecord, TuneError, TuneEvents, TuneResult
from .spec import FinalSpec, RunSpec, SeedSpec, SpaceSpec, StudySpec, TuneSpec
from .tuner import Tuner, run_tune
from .workload import Workload, prune, signature, similar, workload_from_stats

__all__ = ["FILE_SYSTEMS", "builtin_space", "tune_values", "TEMPLATES", "Job", "nprocs_from_command",
           "resolve_job", "study_name", "detect_fs", "ENV_KNOWLEDGE", "KnowledgeBase", "default_knowledge_path",
           "LAYERS", "OBJECTIVE_DIRECTIONS", "OBJECTIVE_UNITS", "Measurement", "measure", "DEFAULT_SAMPLER",
           "SAMPLERS", "Sampler", "get_sampler", "UNSET", "Param", "Space", "SpaceError", "load_space",
           "parse_space", "TrialRecord", "TuneError", "TuneEvents", "Tuner", "TuneResult", "TuneSpec", "StudySpec",
           "SpaceSpec", "RunSpec", "FinalSpec", "SeedSpec", "run_tune",
           "Workload", "prune", "signature", "similar", "workload_from_stats"]

"""`iotame calibrate`: measure the storage, memory, network and collective strategies parts of a machine profile
(docs/calibrate.md), fit the cost model to the strategies' measurements (fit.py) and check that a profile still
holds; the profile's format and its validator (docs/formats.md, Machine profile); which profile applies to a data
file (discover.py, docs/calibrate.md)."""
from .check import DEFAULT_TOLERANCE, check_profile, check_request, fit_report, identity_problems, judge
from .discover import (ENV_PROFILE, default_profile_path, find_profile, matches, profile_dirs,
                       user_profile_dir)
from .fit import fit_strategies, fitted_seconds
from .filesystem import ceph_layout, fs_identity, lustre_layout, parse_stat_f
from .measure import (DEFAULT_STREAMS, FULL, NETWORK_NOTE, QUICK, Calibration, Settings, calibrate,
                      dirty_freerun_bytes, memory_copy_mbs, stream_counts, write_back_section)
from .network import measure_network, network_job, network_section, nodes_section, run_netprobe
from .strategies import FULL_DESIGN, QUICK_DESIGN, STRATEGIES, Design, measure_strategies
from .profile import (PROFILE_KIND, PROFILE_VERSION, ProfileError, curve_at, load_profile, profile_json,
                      save_profile, validate_profile)

__all__ = ["calibrate", "Calibration", "Settings", "FULL", "QUICK", "DEFAULT_STREAMS", "stream_counts", "NETWORK_NOTE",
           "memory_copy_mbs",
           "dirty_freerun_bytes", "write_back_section", "fs_identity", "ceph_layout", "lustre_layout",
           "parse_stat_f", "check_profile", "check_request", "identity_problems", "judge", "DEFAULT_TOLERANCE",
           "PROFILE_KIND", "PROFILE_VERSION", "ProfileError", "load_profile", "profile_json", "save_profile",
           "validate_profile", "curve_at", "network_job", "run_netprobe", "network_section", "nodes_section",
           "measure_network", "ENV_PROFILE", "find_profile", "matches", "profile_dirs", "user_profile_dir",
           "default_profile_path", "fit_report", "fit_strategies", "fitted_seconds", "measure_strategies", "Design",
           "FULL_DESIGN", "QUICK_DESIGN", "STRATEGIES"]

"""Experimental designs: which configurations to measure.

Every generator takes a :class:`~engine.space.factors.Space` or a DataFrame of candidate configurations
and returns a :class:`DesignResult` whose ``design`` holds valid configurations only, reproducible
by ``seed``. D-optimal designs follow R's AlgDesign (``optFederov``) and report its criteria.
"""

from engine.design.catalog import SIZE_RULES, DesignType, design_types, suggest_size
from engine.design.classic import full_factorial, random_design
from engine.design.criteria import Criteria, criteria
from engine.design.fedorov import CRITERIA
from engine.design.lhs import latin_hypercube, lhs_unit
from engine.design.optimal import MAX_CANDIDATES, candidates_of, evaluate, optimal_design, optimal_rows
from engine.design.result import DesignResult
from engine.design.screening import fractional_factorial, pb_runs, plackett_burman
from engine.design.source import CandidateTable, as_source

__all__ = [
    "CRITERIA",
    "MAX_CANDIDATES",
    "SIZE_RULES",
    "CandidateTable",
    "Criteria",
    "DesignResult",
    "DesignType",
    "as_source",
    "candidates_of",
    "criteria",
    "design_types",
    "evaluate",
    "fractional_factorial",
    "full_factorial",
    "latin_hypercube",
    "lhs_unit",
    "optimal_design",
    "optimal_rows",
    "pb_runs",
    "plackett_burman",
    "random_design",
    "suggest_size",
]

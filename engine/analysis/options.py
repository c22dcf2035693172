"""The analysis options a user can name (CLI flags, page widgets), importable without the numerics."""

import math
from collections.abc import Iterable

#: Response transforms: a name, or a number (λ for ``bcPower``).
TRANSFORMS = ("none", "log", "boxcox", "boxcox-round", "auto", "auto-round")
#: ANOVA table types: 1 = sequential (R's ``summary(aov)``), 2 and 3 = ``car::Anova``.
ANOVA_TYPES = (1, 2, 3)
#: How repeated measurements of one configuration enter the fit.
REPEATS = ("all", "mean")
#: What decides that a factor gets fixed: one joint test of all its terms ("factor", adjusted across the
#: factors), or any single term below the threshold ("term", the DLMT paper's rule).
FACTOR_RULES = ("factor", "term")
#: Multiplicity adjustments of the factor tests: Holm (family-wise), Benjamini–Hochberg (FDR), or none.
ADJUSTMENTS = ("holm", "fdr", "none")
#: The automatic rule's threshold on ncvTest's p-value (Orio's DLMT).
NCV_ALPHA = 0.05


def default_transform(values: Iterable[float]) -> str:
    """The transform an analysis starts from: for a positive objective (times, energies) Box-Cox with
    car's rounded λ, as the DLMT paper does, so a model cannot predict a negative time; otherwise none."""
    finite = [v for v in values if math.isfinite(v)]
    return "boxcox-round" if finite and min(finite) > 0 else "none"


def nonpositive_warning(predicted: float, observed: Iterable[float], objective: str) -> str | None:
    """One line when a model predicts ``objective`` ≤ 0 although every observed value is positive: the
    linear model extrapolates past the data and its "best" is an artefact."""
    finite = [v for v in observed if math.isfinite(v)]
    if not (finite and min(finite) > 0 and predicted <= 0):
        return None
    return (f"The model predicts {objective} = {predicted:.4g} ≤ 0 although every measurement is positive: it "
            "extrapolates past the data. Use a transform (boxcox-round or log) to keep predictions positive.")
